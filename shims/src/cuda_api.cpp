// CUDA runtime calls as shim error codes. Host code only: no kernels, no nvcc.
#include "cuda_api.h"

#include "tensor.h"

#if AOTI_SHIM_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>
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

// ---- device memory ----
//
// Two layers keep allocation off the driver's slow paths (measured on an H200: an
// empty_strided+delete pair through plain cudaMallocAsync cost 10% more than through
// libtorch's caching allocator, and whole inferences 3-6% more):
// - a pool per device whose release threshold is unbounded, so memory freed before a
//   synchronisation is not handed back to the OS and mapped again after it (on an
//   allocation failure the pool is trimmed and the allocation tried once more);
// - blocks allocated on the legacy default stream wait, once freed, in a small cache
//   keyed by (device, rounded size) for the next request of that size on that stream.
//
// Every block is freed on the stream it was allocated on, as libtorch's allocator does:
// the model's kernels run there, and a free on the deleting thread's current stream
// would not be ordered after them. Only the legacy stream is cached: it is never
// destroyed (a cached handle of a destroyed stream could name a new, unordered stream)
// and never captured into a CUDA graph.
namespace {

constexpr int kMaxPooledDevices = 64;
constexpr size_t kRound = 512;
constexpr size_t kMaxCachedBlock = size_t(64) << 20;
constexpr size_t kMaxCachedBytes = size_t(1) << 30;

size_t rounded(size_t nbytes) { return nbytes == 0 ? kRound : (nbytes + kRound - 1) / kRound * kRound; }

bool cacheable(void* stream) { return stream == nullptr || stream == static_cast<void*>(cudaStreamLegacy); }

struct Block {
  int device;
  size_t size;
  void* stream;  // where it was allocated, and where it is freed
};

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<uint64_t, std::vector<void*>> idle;  // (device, size) -> blocks
  std::unordered_map<void*, Block> owned;                 // every block handed out or idle
  size_t idle_bytes = 0;
  cudaMemPool_t pools[kMaxPooledDevices] = {};
  bool pool_failed[kMaxPooledDevices] = {};
};

uint64_t idle_key(int device, size_t size) { return (static_cast<uint64_t>(size) << 8) | static_cast<uint64_t>(device); }

BlockCache& cache() {
  static BlockCache* instance = new BlockCache();  // never destroyed: frees may run at exit
  return *instance;
}

// The device's own pool, created on first use; null where that fails (callers hold the mutex).
cudaMemPool_t pool_for(BlockCache& c, int device) {
  if (device < 0 || device >= kMaxPooledDevices || c.pool_failed[device]) {
    return nullptr;
  }
  if (c.pools[device] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
      (void)cudaGetLastError();
      c.pool_failed[device] = true;  // plain cudaMallocAsync from now on
      return nullptr;
    }
    uint64_t threshold = UINT64_MAX;
    (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    c.pools[device] = pool;
  }
  return c.pools[device];
}

cudaError_t allocate(void** out, size_t size, cudaMemPool_t pool, void* stream) {
  return pool != nullptr ? cudaMallocFromPoolAsync(out, size, pool, as_stream(stream))
                         : cudaMallocAsync(out, size, as_stream(stream));
}

// Hands every idle block back to its pool and the pool's unused memory back to the
// device, so that one more allocation can be tried (callers hold the mutex).
void release_idle(BlockCache& c, cudaMemPool_t pool) {
  for (auto& [key, blocks] : c.idle) {
    for (void* block : blocks) {
      auto found = c.owned.find(block);
      (void)cudaFreeAsync(block, as_stream(found != c.owned.end() ? found->second.stream : nullptr));
      if (found != c.owned.end()) {
        c.owned.erase(found);
      }
    }
  }
  c.idle.clear();
  c.idle_bytes = 0;
  if (pool != nullptr) {
    (void)cudaDeviceSynchronize();  // frees complete before the trim can return their memory
    (void)cudaMemPoolTrimTo(pool, 0);
  }
  (void)cudaGetLastError();
}

AOTITorchError malloc_locked(BlockCache& c, void** ptr, size_t nbytes, void* stream) {
  int device = 0;
  AOTISHIM_TRY(check(cudaGetDevice(&device), "cudaGetDevice"));
  size_t size = rounded(nbytes);
  if (cacheable(stream)) {
    auto idle = c.idle.find(idle_key(device, size));
    if (idle != c.idle.end() && !idle->second.empty()) {
      *ptr = idle->second.back();
      idle->second.pop_back();
      if (idle->second.empty()) {
        c.idle.erase(idle);
      }
      c.idle_bytes -= size;
      return AOTI_SHIM_OK;
    }
  }
  cudaMemPool_t pool = pool_for(c, device);
  void* fresh = nullptr;
  cudaError_t status = allocate(&fresh, size, pool, stream);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_idle(c, pool);
    status = allocate(&fresh, size, pool, stream);
  }
  AOTISHIM_TRY(check(status, "cudaMallocAsync"));
  try {
    c.owned.emplace(fresh, Block{device, size, stream});
  } catch (...) {
    (void)cudaFreeAsync(fresh, as_stream(stream));
    return fail_format(AOTI_SHIM_E_OUT_OF_MEMORY, "cudaMallocAsync: no host memory for the block's record");
  }
  *ptr = fresh;
  return AOTI_SHIM_OK;
}

AOTITorchError free_locked(BlockCache& c, void* ptr, void* stream) {
  auto found = c.owned.find(ptr);
  if (found == c.owned.end()) {
    // Not ours (or allocated before the records): the caller's stream is all we know.
    return check(cudaFreeAsync(ptr, as_stream(stream)), "cudaFreeAsync");
  }
  Block block = found->second;
  if (cacheable(block.stream) && block.size <= kMaxCachedBlock && c.idle_bytes + block.size <= kMaxCachedBytes) {
    try {
      c.idle[idle_key(block.device, block.size)].push_back(ptr);
      c.idle_bytes += block.size;
      return AOTI_SHIM_OK;
    } catch (...) {
      // No room to remember it: free it instead.
    }
  }
  c.owned.erase(found);
  return check(cudaFreeAsync(ptr, as_stream(block.stream)), "cudaFreeAsync");
}

}  // namespace

AOTITorchError malloc_async(void** ptr, size_t nbytes, void* stream) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return malloc_locked(c, ptr, nbytes, stream);
}

AOTITorchError free_async(void* ptr, void* stream) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return free_locked(c, ptr, stream);
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
