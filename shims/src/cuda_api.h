// The few CUDA runtime calls the shims make, as shim error codes. Built without
// CUDA (AOTI_SHIM_WITH_CUDA=0) every call returns AOTI_SHIM_E_CUDA_UNAVAILABLE.
#pragma once

#include "aoti_shim/shim.h"

#include <cstddef>
#include <cstdint>

namespace aotishim::cuda {

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };

AOTITorchError device_count(int32_t* out);
AOTITorchError get_device(int32_t* out);
AOTITorchError set_device(int32_t index);
// ---- device memory (block_cache.cpp) ----
// A block of device memory as its owner keeps it (a tensor's storage): freeing it then
// needs no lookup.
struct Block {
  void* ptr = nullptr;
  void* stream = nullptr;    // where it was allocated, and where it is freed
  uint64_t stream_key = 0;   // the block cache's key for that stream when it was allocated
  size_t size = 0;           // the bytes it holds, rounded up
  int32_t device = 0;
};
// A block of at least nbytes of `device`'s memory, ordered on `stream` (a stream of that
// device; null: its legacy default stream). Needs no particular current device.
AOTITorchError allocate_block(size_t nbytes, int32_t device, void* stream, Block* out);
// Frees a block of allocate_block, ordered on the stream it was allocated on (kept for reuse
// on that stream where it can be).
AOTITorchError release_block(const Block& block);
// The same for a caller that keeps only the pointer (raw_alloc, raw_delete): the library
// keeps the record. A pointer it did not hand out is freed on `stream` of `device`.
AOTITorchError malloc_async(void** ptr, size_t nbytes, int32_t device, void* stream);
AOTITorchError free_async(void* ptr, int32_t device, void* stream);
// The stream guards' memo (issue 38): while a CUDA stream guard lives on this thread, the
// block cache reads its stream's CUDA id and capture state once (at the first allocation or
// free on it) instead of on every call; block_cache.cpp says why that is safe. Deleting the
// guard forgets it; guards may be deleted in any order.
void remember_stream(uint64_t guard_id, int32_t device, void* stream) noexcept;
void forget_stream(uint64_t guard_id) noexcept;
// Cross-stream ordering through an event: `waiter` (on waiter_device) waits for all
// work queued so far on `signaller` (on signaller_device). Either stream may be null
// (that device's legacy default stream). A no-op when both are the same stream of
// the same device.
AOTITorchError stream_wait(int32_t waiter_device, void* waiter, int32_t signaller_device, void* signaller);
AOTITorchError host_alloc(void** ptr, size_t nbytes);
AOTITorchError host_free(void* ptr);
AOTITorchError memcpy_async(void* dst, const void* src, size_t nbytes, CopyKind kind, void* stream);
AOTITorchError memcpy2d_async(
    void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, CopyKind kind,
    void* stream);
AOTITorchError memset_async(void* ptr, int value, size_t nbytes, void* stream);
AOTITorchError synchronize(void* stream);
AOTITorchError is_pinned(const void* ptr, bool* out);
// A cudaError_t (as int) from code that includes no CUDA header here, e.g. a kernel launch.
AOTITorchError check_status(int status, const char* call);

// Switches the current device for a scope and switches back (errors on restore are dropped:
// the device existed when the scope began).
class DeviceScope {
 public:
  DeviceScope() = default;
  AOTITorchError enter(int32_t index);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int32_t previous_ = -1;
};

}  // namespace aotishim::cuda
