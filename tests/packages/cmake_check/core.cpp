#include <stdint.h>

extern "C" __attribute__((visibility("default"))) int32_t aoti_torch_dtype_float32(void) { return 6; }
