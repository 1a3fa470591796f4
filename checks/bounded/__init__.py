"""Bounded reads of an untrusted file, shared by the Mach-O and PE readers."""
