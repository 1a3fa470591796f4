/* Prefixed shims (the rename header is on this target's include path). */
#include <stdint.h>

#include "aoti_shim_rename.h"

int32_t aoti_torch_device_type_cpu(void) { return 0; }
