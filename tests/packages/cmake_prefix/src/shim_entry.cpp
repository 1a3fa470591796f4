// The shared library's own code references nothing in shim_impl.
extern "C" __attribute__((visibility("default"))) int fixture_shim_abi(void) { return 1; }
