"""Test package: two shim libraries, one of them unprefixed."""
