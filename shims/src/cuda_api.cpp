// CUDA runtime calls as shim error codes. Host code only: no kernels, no nvcc.
#include "cuda_api.h"

#include "tensor.h"

#if AOTI_SHIM_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
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
//   synchronisation is not handed back to the OS and mapped again after it;
// - freed blocks wait in a small cache keyed by (device, stream, rounded size) and go to
//   the next request of that size on that stream. Reuse on the stream that freed the
//   block is ordered after the free, which is exactly cudaFreeAsync's contract.
namespace {

constexpr int kMaxPooledDevices = 64;
constexpr size_t kRound = 512;
constexpr size_t kMaxCachedBlock = size_t(64) << 20;
constexpr size_t kMaxCachedBytes = size_t(1) << 30;

size_t rounded(size_t nbytes) { return nbytes == 0 ? kRound : (nbytes + kRound - 1) / kRound * kRound; }

struct BlockKey {
  int device;
  void* stream;
  size_t size;
  bool operator==(const BlockKey& other) const {
    return device == other.device && stream == other.stream && size == other.size;
  }
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const noexcept {
    size_t h = std::hash<void*>()(k.stream);
    h ^= std::hash<size_t>()(k.size) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h ^ static_cast<size_t>(k.device);
  }
};

struct Block {
  int device;
  size_t size;
};

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<BlockKey, std::vector<void*>, BlockKeyHash> idle;
  std::unordered_map<void*, Block> owned;  // every block handed out or idle
  size_t idle_bytes = 0;
  cudaMemPool_t pools[kMaxPooledDevices] = {};
};

BlockCache& cache() {
  static BlockCache* instance = new BlockCache();  // never destroyed: frees may run at exit
  return *instance;
}

// The device's own pool, created on first use (callers hold the cache's mutex).
cudaMemPool_t pool_for(BlockCache& c, int device) {
  if (device < 0 || device >= kMaxPooledDevices) {
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
      return nullptr;
    }
    uint64_t threshold = UINT64_MAX;
    (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    c.pools[device] = pool;
  }
  return c.pools[device];
}

}  // namespace

AOTITorchError malloc_async(void** ptr, size_t nbytes, void* stream) {
  int device = 0;
  AOTISHIM_TRY(check(cudaGetDevice(&device), "cudaGetDevice"));
  size_t size = rounded(nbytes);
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto idle = c.idle.find(BlockKey{device, stream, size});
  if (idle != c.idle.end() && !idle->second.empty()) {
    *ptr = idle->second.back();
    idle->second.pop_back();
    c.idle_bytes -= size;
    return AOTI_SHIM_OK;
  }
  cudaMemPool_t pool = pool_for(c, device);
  void* fresh = nullptr;
  cudaError_t status = pool != nullptr ? cudaMallocFromPoolAsync(&fresh, size, pool, as_stream(stream))
                                       : cudaMallocAsync(&fresh, size, as_stream(stream));
  if (status == cudaErrorMemoryAllocation && c.idle_bytes > 0) {
    // Give the idle blocks back and try once more before reporting out of memory.
    (void)cudaGetLastError();
    for (auto& [key, blocks] : c.idle) {
      for (void* block : blocks) {
        (void)cudaFreeAsync(block, as_stream(key.stream));
        c.owned.erase(block);
      }
      blocks.clear();
    }
    c.idle_bytes = 0;
    status = pool != nullptr ? cudaMallocFromPoolAsync(&fresh, size, pool, as_stream(stream))
                             : cudaMallocAsync(&fresh, size, as_stream(stream));
  }
  AOTISHIM_TRY(check(status, "cudaMallocAsync"));
  c.owned.emplace(fresh, Block{device, size});
  *ptr = fresh;
  return AOTI_SHIM_OK;
}

AOTITorchError free_async(void* ptr, void* stream) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto found = c.owned.find(ptr);
  if (found != c.owned.end() && found->second.size <= kMaxCachedBlock &&
      c.idle_bytes + found->second.size <= kMaxCachedBytes) {
    c.idle[BlockKey{found->second.device, stream, found->second.size}].push_back(ptr);
    c.idle_bytes += found->second.size;
    return AOTI_SHIM_OK;
  }
  if (found != c.owned.end()) {
    c.owned.erase(found);
  }
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
