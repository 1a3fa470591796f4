"""The lookup models of Mach-O (dyld) and PE (the Windows loader) that check judges native images by."""
