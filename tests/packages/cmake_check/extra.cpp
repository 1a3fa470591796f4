#include <stdint.h>

extern "C" __attribute__((visibility("default"))) int32_t aoti_torch_device_type_cpu(void) { return 0; }
