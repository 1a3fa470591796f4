/* The same ABI, added later by someone who did not call aoti_shim_prefix(). */
#include <stddef.h>
#include <stdint.h>

typedef int32_t AOTITorchError;
typedef struct SlimTensor* AtenTensorHandle;

AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                                        int32_t dtype, int32_t device_type, int32_t device_index,
                                        AtenTensorHandle* ret) {
  (void)ndim; (void)sizes; (void)strides; (void)dtype; (void)device_type; (void)device_index;
  if (ret == NULL) return 1;
  *ret = NULL;
  return 2;
}
