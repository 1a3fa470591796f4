"""What ld.so does: the file search, library classes and the binding model."""
