// CUDA runtime calls as shim error codes. Host code only: no kernels, no nvcc. Device
// memory is block_cache.cpp's.
#include "cuda_api.h"

#include "profile.h"
#include "tensor.h"

#if AOTI_SHIM_WITH_CUDA
#include <cuda_runtime_api.h>

#include <atomic>
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

// The device count cannot change in a process (CUDA_VISIBLE_DEVICES is read once):
// asked once, not on every new tensor and guard. A failure is not kept, so it is
// reported again the same way next time.
AOTITorchError device_count(int32_t* out) {
  static std::atomic<int32_t> known{-1};
  int32_t cached = known.load(std::memory_order_relaxed);
  if (cached >= 0) {
    *out = cached;
    return AOTI_SHIM_OK;
  }
  AOTISHIM_PROFILE_STEP("cuda: cudaGetDeviceCount");
  int count = 0;
  AOTISHIM_TRY(check(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  known.store(count, std::memory_order_relaxed);
  *out = count;
  return AOTI_SHIM_OK;
}

AOTITorchError get_device(int32_t* out) {
  // With one visible device it is the current one (cudaSetDevice takes no other index):
  // no runtime call (issue 38: a stream guard and a new block each asked, 0.15-0.24 us of
  // profiled time per inference on an H200).
  int32_t count = 0;
  if (device_count(&count) == AOTI_SHIM_OK && count == 1) {
    *out = 0;
    return AOTI_SHIM_OK;
  }
  AOTISHIM_PROFILE_STEP("cuda: cudaGetDevice");
  int device = 0;
  AOTISHIM_TRY(check(cudaGetDevice(&device), "cudaGetDevice"));
  *out = device;
  return AOTI_SHIM_OK;
}

AOTITorchError set_device(int32_t index) {
  AOTISHIM_PROFILE_STEP("cuda: cudaSetDevice");
  return check(cudaSetDevice(index), "cudaSetDevice");
}

AOTITorchError stream_wait(int32_t waiter_device, void* waiter, int32_t signaller_device, void* signaller) {
  if (waiter_device == signaller_device && as_stream(waiter) == as_stream(signaller)) {
    return AOTI_SHIM_OK;
  }
  AOTISHIM_PROFILE_STEP("cuda: event record + cudaStreamWaitEvent");
  // The event belongs to the signalling stream's device: made and recorded there.
  cudaEvent_t event = nullptr;
  {
    DeviceScope scope;
    AOTISHIM_TRY(scope.enter(signaller_device));
    AOTISHIM_TRY(check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags"));
    cudaError_t recorded = cudaEventRecord(event, as_stream(signaller));
    if (recorded != cudaSuccess) {
      (void)cudaEventDestroy(event);
      return check(recorded, "cudaEventRecord");
    }
  }
  cudaError_t waited = cudaSuccess;
  {
    // A null waiter is the waiter device's legacy stream: that device must be current.
    DeviceScope scope;
    AOTITorchError entered = scope.enter(waiter_device);
    if (entered != AOTI_SHIM_OK) {
      (void)cudaEventDestroy(event);
      return entered;
    }
    waited = cudaStreamWaitEvent(as_stream(waiter), event, 0);
  }
  // Destroying a recorded event that a stream waits on is allowed: the wait stays.
  (void)cudaEventDestroy(event);
  return check(waited, "cudaStreamWaitEvent");
}

AOTITorchError host_alloc(void** ptr, size_t nbytes) {
  AOTISHIM_PROFILE_STEP("cuda: cudaHostAlloc");
  // Portable: page-locked for every device's context, not only the current one's, so a
  // copy from it to any GPU is a true asynchronous DMA (else it is staged like pageable
  // memory and waits for the stream).
  return check(cudaHostAlloc(ptr, nbytes, cudaHostAllocPortable), "cudaHostAlloc");
}

AOTITorchError host_free(void* ptr) {
  AOTISHIM_PROFILE_STEP("cuda: cudaFreeHost");
  return check(cudaFreeHost(ptr), "cudaFreeHost");
}

AOTITorchError memcpy_async(void* dst, const void* src, size_t nbytes, CopyKind kind, void* stream) {
  AOTISHIM_PROFILE_STEP("cuda: cudaMemcpyAsync");
  return check(cudaMemcpyAsync(dst, src, nbytes, to_cuda(kind), as_stream(stream)), "cudaMemcpyAsync");
}

AOTITorchError memcpy2d_async(
    void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, CopyKind kind,
    void* stream) {
  AOTISHIM_PROFILE_STEP("cuda: cudaMemcpy2DAsync");
  return check(
      cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, to_cuda(kind), as_stream(stream)),
      "cudaMemcpy2DAsync");
}

AOTITorchError memset_async(void* ptr, int value, size_t nbytes, void* stream) {
  AOTISHIM_PROFILE_STEP("cuda: cudaMemsetAsync");
  return check(cudaMemsetAsync(ptr, value, nbytes, as_stream(stream)), "cudaMemsetAsync");
}

AOTITorchError synchronize(void* stream) {
  AOTISHIM_PROFILE_STEP("cuda: cudaStreamSynchronize");
  return check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
}

AOTITorchError check_status(int status, const char* call) { return check(static_cast<cudaError_t>(status), call); }

AOTITorchError is_pinned(const void* ptr, bool* out) {
  AOTISHIM_PROFILE_STEP("cuda: cudaPointerGetAttributes");
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
AOTITorchError stream_wait(int32_t, void*, int32_t, void*) { return unavailable("cudaStreamWaitEvent"); }
AOTITorchError host_alloc(void**, size_t) { return unavailable("cudaHostAlloc"); }
AOTITorchError host_free(void*) { return unavailable("cudaFreeHost"); }
AOTITorchError memcpy_async(void*, const void*, size_t, CopyKind, void*) { return unavailable("cudaMemcpyAsync"); }
AOTITorchError memcpy2d_async(void*, size_t, const void*, size_t, size_t, size_t, CopyKind, void*) {
  return unavailable("cudaMemcpy2DAsync");
}
AOTITorchError memset_async(void*, int, size_t, void*) { return unavailable("cudaMemsetAsync"); }
AOTITorchError synchronize(void*) { return unavailable("cudaStreamSynchronize"); }
AOTITorchError check_status(int, const char* call) { return unavailable(call); }
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
