// CUDA runtime calls as shim error codes. Host code only: no kernels, no nvcc.
#include "cuda_api.h"

#include "tensor.h"

#if AOTI_SHIM_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace aotishim::cuda {

#if AOTI_SHIM_WITH_CUDA

namespace {

// Maps a CUDA error to a shim code and clears CUDA's last-error state, so one
// failure does not leak into the next unrelated call.
AOTITorchError check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) {
    return AOTI_SHIM_OK;
  }
  (void)cudaGetLastError();
  const char* text = cudaGetErrorString(status);
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s: CUDA is unavailable (%d: %s)", call, status, text);
    case cudaErrorMemoryAllocation:
      return fail_format(AOTI_SHIM_E_OUT_OF_MEMORY, "%s: out of memory (%d: %s)", call, status, text);
    case cudaErrorInvalidDevice:
      return fail_format(AOTI_SHIM_E_DEVICE_INDEX_RANGE, "%s: invalid device (%d: %s)", call, status, text);
    default:
      return fail_format(AOTI_SHIM_E_CUDA_ERROR, "%s failed (%d: %s)", call, status, text);
  }
}

cudaMemcpyKind to_cuda(CopyKind kind) {
  switch (kind) {
    case CopyKind::HostToDevice:
      return cudaMemcpyHostToDevice;
    case CopyKind::DeviceToHost:
      return cudaMemcpyDeviceToHost;
    case CopyKind::DeviceToDevice:
      // Default lets UVA route copies between two devices.
      return cudaMemcpyDefault;
  }
  return cudaMemcpyDefault;
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

AOTITorchError device_count(int32_t* out) {
  int count = 0;
  AOTISHIM_TRY(check(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  *out = count;
  return AOTI_SHIM_OK;
}

AOTITorchError get_device(int32_t* out) {
  int device = 0;
  AOTISHIM_TRY(check(cudaGetDevice(&device), "cudaGetDevice"));
  *out = device;
  return AOTI_SHIM_OK;
}

AOTITorchError set_device(int32_t index) { return check(cudaSetDevice(index), "cudaSetDevice"); }

AOTITorchError malloc_async(void** ptr, size_t nbytes, void* stream) {
  return check(cudaMallocAsync(ptr, nbytes, as_stream(stream)), "cudaMallocAsync");
}

AOTITorchError free_async(void* ptr, void* stream) {
  return check(cudaFreeAsync(ptr, as_stream(stream)), "cudaFreeAsync");
}

AOTITorchError host_alloc(void** ptr, size_t nbytes) {
  return check(cudaHostAlloc(ptr, nbytes, cudaHostAllocDefault), "cudaHostAlloc");
}

AOTITorchError host_free(void* ptr) { return check(cudaFreeHost(ptr), "cudaFreeHost"); }

AOTITorchError memcpy_async(void* dst, const void* src, size_t nbytes, CopyKind kind, void* stream) {
  return check(cudaMemcpyAsync(dst, src, nbytes, to_cuda(kind), as_stream(stream)), "cudaMemcpyAsync");
}

AOTITorchError memcpy2d_async(
    void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, CopyKind kind,
    void* stream) {
  return check(
      cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, to_cuda(kind), as_stream(stream)),
      "cudaMemcpy2DAsync");
}

AOTITorchError memset_async(void* ptr, int value, size_t nbytes, void* stream) {
  return check(cudaMemsetAsync(ptr, value, nbytes, as_stream(stream)), "cudaMemsetAsync");
}

AOTITorchError synchronize(void* stream) {
  return check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
}

AOTITorchError is_pinned(const void* ptr, bool* out) {
  cudaPointerAttributes attributes{};
  AOTISHIM_TRY(check(cudaPointerGetAttributes(&attributes, ptr), "cudaPointerGetAttributes"));
  *out = attributes.type == cudaMemoryTypeHost;
  return AOTI_SHIM_OK;
}

#else  // !AOTI_SHIM_WITH_CUDA

namespace {
AOTITorchError unavailable(const char* call) {
  return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s: aoti_shim was built without CUDA", call);
}
}  // namespace

AOTITorchError device_count(int32_t*) { return unavailable("cudaGetDeviceCount"); }
AOTITorchError get_device(int32_t*) { return unavailable("cudaGetDevice"); }
AOTITorchError set_device(int32_t) { return unavailable("cudaSetDevice"); }
AOTITorchError malloc_async(void**, size_t, void*) { return unavailable("cudaMallocAsync"); }
AOTITorchError free_async(void*, void*) { return unavailable("cudaFreeAsync"); }
AOTITorchError host_alloc(void**, size_t) { return unavailable("cudaHostAlloc"); }
AOTITorchError host_free(void*) { return unavailable("cudaFreeHost"); }
AOTITorchError memcpy_async(void*, const void*, size_t, CopyKind, void*) { return unavailable("cudaMemcpyAsync"); }
AOTITorchError memcpy2d_async(void*, size_t, const void*, size_t, size_t, size_t, CopyKind, void*) {
  return unavailable("cudaMemcpy2DAsync");
}
AOTITorchError memset_async(void*, int, size_t, void*) { return unavailable("cudaMemsetAsync"); }
AOTITorchError synchronize(void*) { return unavailable("cudaStreamSynchronize"); }
AOTITorchError is_pinned(const void*, bool*) { return unavailable("cudaPointerGetAttributes"); }

#endif  // AOTI_SHIM_WITH_CUDA

AOTITorchError DeviceScope::enter(int32_t index) {
  int32_t current = 0;
  AOTISHIM_TRY(get_device(&current));
  if (current != index) {
    AOTISHIM_TRY(set_device(index));
    previous_ = current;
  }
  return AOTI_SHIM_OK;
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0) {
    (void)set_device(previous_);
  }
}

}  // namespace aotishim::cuda
