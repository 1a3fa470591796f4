/* Three shims of the aoti_torch_* C ABI, renamed by the prefix the build chose. */
#include <stddef.h>
#include <stdint.h>

#include "aoti_shim_rename.h"

typedef int32_t AOTITorchError;
typedef struct SlimTensor* AtenTensorHandle;

int32_t aoti_torch_device_type_cpu(void) { return 0; }

int32_t aoti_torch_dtype_float32(void) { return 6; }

AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                                        int32_t dtype, int32_t device_type, int32_t device_index,
                                        AtenTensorHandle* ret) {
  (void)ndim; (void)sizes; (void)strides; (void)dtype; (void)device_type; (void)device_index;
  if (ret == NULL) return 1;
  *ret = NULL;
  return 2; /* a test shim: allocation is not implemented */
}
