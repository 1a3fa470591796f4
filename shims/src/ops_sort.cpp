// aoti_torch_cuda_radix_sort_u32: the reference library's own shim (ops_sort.h), the CUB
// sort of ops_sort.cu on the caller's stream.
#include "ops_sort.h"

#include "cuda_api.h"
#include "profile.h"
#include "tensor.h"

using namespace aotishim;

AOTITorchError aoti_torch_cuda_radix_sort_u32(const uint32_t* keys_in, uint32_t* keys_out, int64_t count, void* stream) {
  AOTISHIM_PROFILE_API("aoti_torch_cuda_radix_sort_u32");
  return guarded("aoti_torch_cuda_radix_sort_u32", [&]() -> AOTITorchError {
    if (count < 0 || (count > 0 && (keys_in == nullptr || keys_out == nullptr))) {
      return fail_format(AOTI_SHIM_E_INVALID_ARGUMENT, "aoti_torch_cuda_radix_sort_u32: %lld keys at %p -> %p",
                         static_cast<long long>(count), static_cast<const void*>(keys_in), static_cast<void*>(keys_out));
    }
    if (count > INT32_MAX) {
      return fail_format(AOTI_SHIM_E_INVALID_ARGUMENT, "aoti_torch_cuda_radix_sort_u32: %lld keys (CUB sorts at most 2^31-1)",
                         static_cast<long long>(count));
    }
#if AOTI_SHIM_WITH_CUDA
    if (count == 0) return AOTI_SHIM_OK;
    int32_t device = 0;
    AOTISHIM_TRY(cuda::get_device(&device));
    void* on = stream != nullptr ? stream : current_stream(device);
    return cuda::check_status(kernels::radix_sort_u32(keys_in, keys_out, count, on), "cub::DeviceRadixSort::SortKeys");
#else
    (void)stream;
    return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "aoti_torch_cuda_radix_sort_u32: aoti_shim was built without CUDA");
#endif
  });
}
