/* A two-function slice of the AOTInductor shim ABI. */
#pragma once
#include <stdint.h>

#include "aoti_shim_rename.h" /* before any declaration: renames them all when the prefix is set */

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((visibility("default"))) int32_t aoti_torch_dtype_float32(void);
__attribute__((visibility("default"))) int32_t aoti_torch_device_type_cpu(void);

#ifdef __cplusplus
}
#endif
