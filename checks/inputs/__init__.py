"""What a user names (files, folders, wheels) turned into ELF files to read."""
