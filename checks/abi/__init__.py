"""The shim ABI: which names are shim names, and the private-prefix rule."""
