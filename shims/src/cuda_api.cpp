// CUDA runtime calls as shim error codes. Host code only: no kernels, no nvcc.
#include "cuda_api.h"

#include "profile.h"
#include "tensor.h"

#if AOTI_SHIM_WITH_CUDA
#include <cuda_runtime_api.h>

#include <atomic>
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

// ---- device memory ----
//
// Two layers keep allocation off the driver's slow paths (measured on an H200: an
// empty_strided+delete pair through plain cudaMallocAsync cost 10% more than through
// libtorch's caching allocator, and whole inferences 3-6% more):
// - a pool per device whose release threshold is unbounded, so memory freed before a
//   synchronisation is not handed back to the OS and mapped again after it (on an
//   allocation failure the pool is trimmed and the allocation tried once more);
// - freed blocks wait in a small cache keyed by (device, stream, rounded size) for the
//   next request of that size on that stream: stream order puts the block's earlier
//   kernels before its next user's, with no event (issue 38: with a caller stream, every
//   allocation and free went to the driver, the shims' largest host cost).
//
// Every block is freed on the stream it was allocated on, as libtorch's allocator does:
// the model's kernels run there, and a free on the deleting thread's current stream
// would not be ordered after them. A stream is known in the cache by the id CUDA gives
// it (cudaStreamGetId), never by its handle: a destroyed stream's handle can come back
// for a new, unordered stream, its id cannot. For the same reason an idle block of a
// stream other than the legacy one is handed back with cudaFree (which waits for the
// device) rather than cudaFreeAsync on a handle that may be gone. A stream being
// captured into a CUDA graph neither takes nor gives cached blocks.
namespace {

constexpr int kMaxPooledDevices = 64;
constexpr size_t kRound = 512;
constexpr size_t kMaxCachedBlock = size_t(64) << 20;
constexpr size_t kMaxCachedBytes = size_t(1) << 30;

size_t rounded(size_t nbytes) { return nbytes == 0 ? kRound : (nbytes + kRound - 1) / kRound * kRound; }

bool is_legacy(void* stream) { return stream == nullptr || stream == static_cast<void*>(cudaStreamLegacy); }

// The legacy stream's key; no stream id CUDA hands out is this.
constexpr uint64_t kLegacyStreamId = UINT64_MAX;
// A stream whose blocks the cache must not hold (being captured, or its id unreadable).
constexpr uint64_t kUncachedStream = UINT64_MAX - 1;

// The stream's key in the cache, asked of CUDA: its id, or kUncachedStream.
uint64_t ask_stream_key(void* stream) {
  AOTISHIM_PROFILE_STEP("cuda: cudaStreamIsCapturing + cudaStreamGetId");
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamIsCapturing(as_stream(stream), &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone || cudaStreamGetId(as_stream(stream), &id) != cudaSuccess ||
      id >= kUncachedStream) {
    (void)cudaGetLastError();
    return kUncachedStream;
  }
  return static_cast<uint64_t>(id);
}

// ---- the stream guards' memo ----
//
// Asking CUDA a stream's capture state and id on every allocation and free was most of
// what a caller stream added to the shims' host time (issue 38, run4 on an H200, convnet:
// empty_strided 4.08 against 2.16 us and delete_tensor_object 3.02 against 1.63 us per
// inference on the null stream, 7 calls each, all served by the idle cache). A guarded
// stream is asked once instead. Why that is safe: a CUDA stream guard is a blob's scope
// on its stream (AOTInductor makes one as a run starts and deletes it as the run ends,
// on that thread; a delete on another thread is refused). While it lives, the stream's
// id and capture state change only through a misuse its caller already commits:
// - destroying the stream while a blob runs on it (the blob's own launches would then go
//   to a dead handle), so its handle cannot meanwhile name a new stream;
// - beginning or ending a graph capture of it inside the run (torch's CUDA graphs begin
//   the capture before the model runs, so the blob's guard reads "capturing", and end it
//   after the guard is gone).
// A guard never deleted leaves its stream current on the thread for good, which is
// already that misuse. What still asks CUDA on every call: a stream guarded on no live
// guard of this thread (a caller selection alone, raw allocations outside a run, the
// blob's outputs freed after it): such a stream may have been destroyed, its handle
// reused, or a capture begun since the last call.
struct KnownStream {
  uint64_t guard_id;
  void* stream;
  uint64_t key;  // valid once read
  int32_t device;
  bool read;
};
// Plain data, so a thread's first use runs no constructor, and one thread_local, so a
// lookup costs one __tls_get_addr, not one per variable. Guards nested deeper than this
// are not remembered: their streams are asked per call, as before.
constexpr int kMaxKnownStreams = 8;
struct KnownStreams {
  KnownStream streams[kMaxKnownStreams];
  int count;
};
thread_local KnownStreams known_streams = {};

// The stream's key in the cache: legacy, its CUDA id, or kUncachedStream; from the
// innermost live guard of this thread on that stream where there is one.
uint64_t stream_key(int32_t device, void* stream) {
  if (is_legacy(stream)) {
    return kLegacyStreamId;  // never captured, never destroyed
  }
  KnownStreams& mine = known_streams;
  for (int i = mine.count - 1; i >= 0; --i) {
    KnownStream& entry = mine.streams[i];
    if (entry.stream == stream && entry.device == device) {
      if (!entry.read) {
        entry.key = ask_stream_key(stream);
        entry.read = true;
      }
      return entry.key;
    }
  }
  return ask_stream_key(stream);
}

struct Block {
  int device;
  size_t size;
  void* stream;        // where it was allocated, and where it is freed
  uint64_t stream_id;  // stream_key(device, stream) when it was allocated
};

struct IdleKey {
  uint64_t stream_id;
  size_t size;
  int device;
  bool operator==(const IdleKey& other) const {
    return stream_id == other.stream_id && size == other.size && device == other.device;
  }
};

struct IdleKeyHash {
  size_t operator()(const IdleKey& k) const {
    uint64_t h = k.stream_id * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<uint64_t>(k.size) << 8) | static_cast<uint64_t>(k.device & 0xff);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<IdleKey, std::vector<void*>, IdleKeyHash> idle;  // (stream, size, device) -> blocks
  std::unordered_map<void*, Block> owned;                             // every block handed out or idle
  size_t idle_bytes = 0;
  cudaMemPool_t pools[kMaxPooledDevices] = {};
  bool pool_failed[kMaxPooledDevices] = {};
};

BlockCache& cache() {
  static BlockCache* instance = new BlockCache();  // never destroyed: frees may run at exit
  return *instance;
}

// A pool's memory is reachable from its own device only, whatever cudaDeviceEnablePeerAccess
// says: without this a copy between two GPUs fails with "invalid argument" (seen on two H200s).
// Every device that can reach this one directly gets read and write access.
void grant_peer_access(cudaMemPool_t pool, int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  for (int peer = 0; peer < count && peer < kMaxPooledDevices; ++peer) {
    int reachable = 0;
    if (peer == device || cudaDeviceCanAccessPeer(&reachable, peer, device) != cudaSuccess || !reachable) {
      (void)cudaGetLastError();
      continue;
    }
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = peer;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    if (cudaMemPoolSetAccess(pool, &access, 1) != cudaSuccess) {
      (void)cudaGetLastError();  // the copy then reports its own error
    }
  }
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
    grant_peer_access(pool, device);
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
      // Their device must be current (the legacy stream is the current device's).
      DeviceScope scope;
      if (found != c.owned.end() && scope.enter(found->second.device) != AOTI_SHIM_OK) {
        continue;
      }
      if (key.stream_id == kLegacyStreamId) {
        (void)cudaFreeAsync(block, as_stream(nullptr));
      } else {
        (void)cudaFree(block);  // its stream may be destroyed by now: wait for the device instead
      }
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

// The caller holds the mutex; the current device may be any. stream_id: stream_key(device, stream).
AOTITorchError malloc_locked(
    BlockCache& c, void** ptr, size_t nbytes, int32_t device, void* stream, uint64_t stream_id) {
  size_t size = rounded(nbytes);
  if (stream_id != kUncachedStream) {
    // Empty lists stay in the map: erasing and re-creating one per allocation and free
    // cost two heap operations a pair.
    auto idle = c.idle.find(IdleKey{stream_id, size, device});
    if (idle != c.idle.end() && !idle->second.empty()) {
      profile::count("alloc: block reused from the idle cache");
      *ptr = idle->second.back();
      idle->second.pop_back();
      c.idle_bytes -= size;
      return AOTI_SHIM_OK;
    }
  }
  AOTISHIM_PROFILE_STEP("alloc: new block (cudaMallocFromPoolAsync)");
  // The legacy default stream (null) is the current device's: switch for the call.
  DeviceScope scope;
  AOTISHIM_TRY(scope.enter(device));
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
    c.owned.emplace(fresh, Block{device, size, stream, stream_id});
  } catch (...) {
    (void)cudaFreeAsync(fresh, as_stream(stream));
    return fail_format(AOTI_SHIM_E_OUT_OF_MEMORY, "cudaMallocAsync: no host memory for the block's record");
  }
  *ptr = fresh;
  return AOTI_SHIM_OK;
}

AOTITorchError free_locked(BlockCache& c, void* ptr, int32_t device, void* stream) {
  auto found = c.owned.find(ptr);
  if (found == c.owned.end()) {
    // Not ours (or allocated before the records): the caller's stream is all we know.
    AOTISHIM_PROFILE_STEP("alloc: cudaFreeAsync (a block not ours)");
    DeviceScope scope;
    AOTISHIM_TRY(scope.enter(device));
    return check(cudaFreeAsync(ptr, as_stream(stream)), "cudaFreeAsync");
  }
  Block block = found->second;
  bool cacheable = block.stream_id != kUncachedStream && stream_key(block.device, block.stream) == block.stream_id;
  if (cacheable && block.size <= kMaxCachedBlock && c.idle_bytes + block.size <= kMaxCachedBytes) {
    try {
      c.idle[IdleKey{block.stream_id, block.size, block.device}].push_back(ptr);
      c.idle_bytes += block.size;
      profile::count("alloc: block kept in the idle cache");
      return AOTI_SHIM_OK;
    } catch (...) {
      // No room to remember it: free it instead.
    }
  }
  AOTISHIM_PROFILE_STEP("alloc: cudaFreeAsync");
  c.owned.erase(found);
  DeviceScope scope;
  AOTISHIM_TRY(scope.enter(block.device));
  return check(cudaFreeAsync(ptr, as_stream(block.stream)), "cudaFreeAsync");
}

}  // namespace

AOTITorchError malloc_async(void** ptr, size_t nbytes, int32_t device, void* stream) {
  uint64_t stream_id = stream_key(device, stream);  // outside the lock: it may ask CUDA
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return malloc_locked(c, ptr, nbytes, device, stream, stream_id);
}

void remember_stream(uint64_t guard_id, int32_t device, void* stream) noexcept {
  KnownStreams& mine = known_streams;
  if (mine.count < kMaxKnownStreams && !is_legacy(stream)) {
    // Read lazily, at the first allocation or free: a guard whose run allocates nothing
    // asks nothing.
    mine.streams[mine.count++] = KnownStream{guard_id, stream, 0, device, false};
  }
}

void forget_stream(uint64_t guard_id) noexcept {
  KnownStreams& mine = known_streams;
  for (int i = 0; i < mine.count; ++i) {
    if (mine.streams[i].guard_id == guard_id) {
      for (int j = i + 1; j < mine.count; ++j) {
        mine.streams[j - 1] = mine.streams[j];
      }
      --mine.count;
      return;
    }
  }
}

AOTITorchError free_async(void* ptr, int32_t device, void* stream) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return free_locked(c, ptr, device, stream);
}

bool block_stream(const void* ptr, void** stream) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto found = c.owned.find(const_cast<void*>(ptr));
  if (found == c.owned.end()) {
    return false;
  }
  *stream = found->second.stream;
  return true;
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
AOTITorchError malloc_async(void**, size_t, int32_t, void*) { return unavailable("cudaMallocAsync"); }
AOTITorchError free_async(void*, int32_t, void*) { return unavailable("cudaFreeAsync"); }
bool block_stream(const void*, void**) { return false; }
void remember_stream(uint64_t, int32_t, void*) noexcept {}
void forget_stream(uint64_t) noexcept {}
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
