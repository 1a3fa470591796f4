"""Test package: its shim library sits beside this file."""
