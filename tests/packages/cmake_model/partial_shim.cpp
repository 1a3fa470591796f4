// Two of the shims the blob imports, renamed by the force-included header.
#include <stdint.h>

extern "C" __attribute__((visibility("default"))) int32_t aoti_torch_dtype_float32(void) { return 6; }
extern "C" __attribute__((visibility("default"))) int32_t aoti_torch_device_type_cpu(void) { return 0; }
