/* One prefixed shim; the prefix comes from the project's declared config-setting. */
#include <stdint.h>

#include "aoti_shim_rename.h"

int32_t aoti_torch_dtype_float32(void) { return 6; }
