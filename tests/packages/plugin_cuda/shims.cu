// One shim of the aoti_torch_* C ABI backed by a kernel: fill_ on a float32 CUDA buffer,
// plus a self-contained run of that kernel for the GPU test (allocate, fill, copy back).
#include <cuda_runtime.h>

#include <cstdint>

#include "aoti_shim_rename.h"

#define PCUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

__global__ void fill_kernel(float* out, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = value + static_cast<float>(i);
  }
}

}  // namespace

PCUDA_EXPORT int32_t aoti_torch_dtype_float32(void) { return 6; }

// out[i] = value + i on the device; returns the cudaError_t of the launch.
PCUDA_EXPORT int32_t pcuda_fill_iota(float* device_out, int64_t n, float value) {
  fill_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(device_out, n, value);
  return static_cast<int32_t>(cudaGetLastError());
}

// The whole round trip into host memory; returns a cudaError_t (35/100 without a GPU).
PCUDA_EXPORT int32_t pcuda_fill_iota_host(float* host_out, int64_t n, float value) {
  float* device = nullptr;
  cudaError_t status = cudaMalloc(&device, static_cast<size_t>(n) * sizeof(float));
  if (status != cudaSuccess) {
    return static_cast<int32_t>(status);
  }
  status = static_cast<cudaError_t>(pcuda_fill_iota(device, n, value));
  if (status == cudaSuccess) {
    status = cudaMemcpy(host_out, device, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost);
  }
  cudaFree(device);
  return static_cast<int32_t>(status);
}
