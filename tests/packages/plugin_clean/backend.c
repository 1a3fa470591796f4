/* A backend that calls the shims through the renamed names it was compiled with. */
#include <stdint.h>

#include "aoti_shim_rename.h"

int32_t aoti_torch_dtype_float32(void);

int32_t pclean_backend_float32_code(void) { return aoti_torch_dtype_float32(); }
