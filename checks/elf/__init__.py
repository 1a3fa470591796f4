"""The bounded ELF reader: headers, the dynamic tables, symbols, hash tables, versions, relocations."""
