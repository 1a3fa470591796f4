extern "C" __attribute__((visibility("default"))) int checked_shim_abi(void) { return 1; }
