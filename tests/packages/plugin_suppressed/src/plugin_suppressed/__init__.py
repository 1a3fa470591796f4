"""Test package: a prefixed shim library with one suppressed export."""
