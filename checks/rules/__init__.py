"""check's rules, as a table of (ID, function, doc)."""
