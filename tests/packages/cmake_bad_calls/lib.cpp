int fixture_lib(void) { return 0; }
