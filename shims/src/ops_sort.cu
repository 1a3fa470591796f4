// cub::DeviceRadixSort behind aoti_torch_cuda_radix_sort_u32. CUB's inline templates
// (CCCL, libcu++) are default-visible and libtorch_cuda.so exports the same ones: the
// library's exports are limited to the shim ABI (aoti_shim_limit_exports), so none leaves it.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime_api.h>

#include "ops_sort.h"

namespace aotishim::kernels {

int radix_sort_u32(const uint32_t* keys_in, uint32_t* keys_out, int64_t count, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  size_t bytes = 0;
  cudaError_t status = cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys_in, keys_out, static_cast<int>(count), 0, 32, s);
  if (status != cudaSuccess) return static_cast<int>(status);
  void* scratch = nullptr;
  status = cudaMallocAsync(&scratch, bytes, s);
  if (status != cudaSuccess) return static_cast<int>(status);
  status = cub::DeviceRadixSort::SortKeys(scratch, bytes, keys_in, keys_out, static_cast<int>(count), 0, 32, s);
  cudaError_t freed = cudaFreeAsync(scratch, s);
  return static_cast<int>(status != cudaSuccess ? status : freed);
}

}  // namespace aotishim::kernels
