// Device memory for tensors and raw allocations: pooled, stream-ordered, and kept for reuse.
#include "cuda_api.h"

#include "profile.h"
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

// Three layers keep allocation off the driver's slow paths (measured on an H200: an
// empty_strided+delete pair through plain cudaMallocAsync cost 10% more than through
// libtorch's caching allocator, and whole inferences 3-6% more):
// - a pool per device whose release threshold is unbounded, so memory freed before a
//   synchronisation is not handed back to the OS and mapped again after it (on an
//   allocation failure the pool is trimmed and the allocation tried once more);
// - freed blocks wait in a small cache keyed by (device, stream, rounded size) for the
//   next request of that size on that stream: stream order puts the block's earlier
//   kernels before its next user's, with no event (issue 38: with a caller stream, every
//   allocation and free went to the driver, the shims' largest host cost);
// - in front of that shared cache, each thread keeps its last few small freed blocks in a
//   list of its own, which its next allocations search first, with no lock and no map
//   (issue 38: the lock and the cache's two hash lookups were most of a reused block's
//   cost on an H100's host).
//
// Every block is freed on the stream it was allocated on, as libtorch's allocator does:
// the model's kernels run there, and a free on the deleting thread's current stream
// would not be ordered after them. A tensor's storage keeps the block's record (Block), so
// a free needs no lookup. A stream is known in the cache by the id CUDA gives it
// (cudaStreamGetId), never by its handle: a destroyed stream's handle can come back for a
// new, unordered stream, its id cannot. For the same reason an idle block of a stream
// other than the legacy one is handed back with cudaFree (which waits for the device)
// rather than cudaFreeAsync on a handle that may be gone. A stream being captured into a
// CUDA graph neither takes nor gives cached blocks.
namespace {

constexpr int kMaxPooledDevices = 64;
constexpr size_t kRound = 512;
constexpr size_t kMaxCachedBlock = size_t(64) << 20;
constexpr size_t kMaxCachedBytes = size_t(1) << 30;
// A thread's own list: what one inference of a small model frees, and no block another
// thread's out-of-memory trim would miss much (at most 16 x 1 MiB per thread).
constexpr int kThreadBlocks = 16;
constexpr size_t kMaxThreadBlock = size_t(1) << 20;

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

size_t rounded(size_t nbytes) { return nbytes == 0 ? kRound : (nbytes + kRound - 1) / kRound * kRound; }

bool is_legacy(void* stream) { return stream == nullptr || stream == static_cast<void*>(cudaStreamLegacy); }

// The legacy stream's key; no stream id CUDA hands out is this.
constexpr uint64_t kLegacyStreamId = UINT64_MAX;
// A stream whose blocks the cache must not hold (being captured, or its id unreadable).
constexpr uint64_t kUncachedStream = UINT64_MAX - 1;

// The driver's own entry points for the two questions a stream's key needs (issue 38, run38
// on an H100: 32.9 ns a pair hot, against 104.5 through the runtime, whose every call first
// checks its context and lazy-loading state). Their answers are the runtime's: the same
// status values (CUstreamCaptureStatus is cudaStreamCaptureStatus) and the same stream ids.
using DriverIsCapturing = int (*)(void* stream, int* status);
using DriverGetId = int (*)(void* stream, unsigned long long* id);
struct DriverQueries {
  DriverIsCapturing is_capturing = nullptr;
  DriverGetId get_id = nullptr;
};

template <typename Fn>
Fn driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

const DriverQueries& driver_queries() {
  static const DriverQueries queries{driver_entry<DriverIsCapturing>("cuStreamIsCapturing"),
                                     driver_entry<DriverGetId>("cuStreamGetId")};
  return queries;
}

// The stream's key in the cache, asked of CUDA: its id, or kUncachedStream. Where the driver
// has no entry point or answers an error (no current context on this thread, say), the
// runtime answers.
uint64_t ask_stream_key(void* stream) {
  AOTISHIM_PROFILE_STEP("cuda: the stream's capture state and id");
  const DriverQueries& driver = driver_queries();
  int driver_status = 0;
  unsigned long long id = 0;
  if (driver.is_capturing != nullptr && driver.get_id != nullptr && driver.is_capturing(stream, &driver_status) == 0) {
    if (driver_status != cudaStreamCaptureStatusNone) {
      return kUncachedStream;
    }
    if (driver.get_id(stream, &id) == 0) {
      return id >= kUncachedStream ? kUncachedStream : static_cast<uint64_t>(id);
    }
  }
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(as_stream(stream), &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone || cudaStreamGetId(as_stream(stream), &id) != cudaSuccess ||
      id >= kUncachedStream) {
    (void)cudaGetLastError();
    return kUncachedStream;
  }
  return static_cast<uint64_t>(id);
}

// ---- this thread's allocator state: the stream guards' memo and its idle blocks ----
//
// The memo: asking CUDA a stream's capture state and id on every allocation and free was
// most of what a caller stream added to the shims' host time (issue 38, run4 on an H200,
// convnet: empty_strided 4.08 against 2.16 us and delete_tensor_object 3.02 against 1.63 us
// per inference on the null stream, 7 calls each, all served by the idle cache). A guarded
// stream is asked once instead. Why that is safe: a CUDA stream guard is a blob's scope on
// its stream (AOTInductor makes one as a run starts and deletes it as the run ends, on that
// thread; a delete on another thread is refused). While it lives, the stream's id and
// capture state change only through a misuse its caller already commits:
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

// What an idle block is reused for, in both caches: a request on the same stream key, of
// the same rounded size, on the same device.
struct IdleKey {
  uint64_t stream_key;
  size_t size;
  int device;
  bool operator==(const IdleKey& other) const {
    return stream_key == other.stream_key && size == other.size && device == other.device;
  }
};

struct IdleKeyHash {
  size_t operator()(const IdleKey& k) const {
    uint64_t h = k.stream_key * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<uint64_t>(k.size) << 8) | static_cast<uint64_t>(k.device & 0xff);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

IdleKey key_of(const Block& block) { return IdleKey{block.stream_key, block.size, block.device}; }

// A block idle in a thread's own list.
struct ThreadBlock {
  void* ptr;
  IdleKey key;
};

// Guards nested deeper than this are not remembered: their streams are asked per call.
constexpr int kMaxKnownStreams = 8;
// Plain data, so a thread's first use runs no constructor, and one thread_local, so a
// lookup costs one __tls_get_addr, not one per variable. At the thread's exit its idle
// blocks go to the shared cache (ThreadExit, hooked at the first block kept here).
struct ThreadAllocator {
  KnownStream streams[kMaxKnownStreams];
  int stream_count;
  ThreadBlock blocks[kThreadBlocks];
  int block_count;
  bool exit_hooked;
  bool exited;  // past its exit hook: blocks freed now go to the shared cache
};
thread_local ThreadAllocator thread_allocator = {};

// This thread's allocator state, its address looked up once per call. A dlopened library's
// thread_local is reached through __tls_get_addr, and GCC calls it again at each use rather
// than keep the address in a register (31 call sites in allocate_block, one per step of its
// searches); the empty asm hides where the pointer came from, so it is kept.
ThreadAllocator& this_thread_allocator() {
  ThreadAllocator* mine = &thread_allocator;
  asm("" : "+r"(mine));
  return *mine;
}

// The stream's key in the cache: legacy, its CUDA id, or kUncachedStream; from the
// innermost live guard of this thread on that stream where there is one.
uint64_t stream_key(ThreadAllocator& mine, int32_t device, void* stream) {
  if (is_legacy(stream)) {
    return kLegacyStreamId;  // never captured, never destroyed
  }
  for (int i = mine.stream_count - 1; i >= 0; --i) {
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

// Takes the i-th block out of this thread's list, keeping the rest in the order freed.
void drop_thread_block(ThreadAllocator& mine, int i) {
  for (int j = i + 1; j < mine.block_count; ++j) {
    mine.blocks[j - 1] = mine.blocks[j];
  }
  --mine.block_count;
}

// ---- the shared cache ----

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<IdleKey, std::vector<void*>, IdleKeyHash> idle;  // (stream, size, device) -> blocks
  std::unordered_map<void*, Block> raw;  // blocks handed out by raw_alloc, until raw_delete
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

// An idle block back to its pool (the caller holds the mutex).
void hand_back_idle(void* block, const IdleKey& key) {
  // Its device must be current (the legacy stream is the current device's).
  DeviceScope scope;
  if (scope.enter(key.device) != AOTI_SHIM_OK) {
    return;
  }
  if (key.stream_key == kLegacyStreamId) {
    (void)cudaFreeAsync(block, as_stream(nullptr));
  } else {
    (void)cudaFree(block);  // its stream may be destroyed by now: wait for the device instead
  }
}

// Hands every idle block this thread and the shared cache hold back to its pool, and the
// pool's unused memory back to the device, so that one more allocation can be tried
// (callers hold the mutex). Other threads' own lists keep theirs: at most kThreadBlocks
// blocks of kMaxThreadBlock bytes each.
void release_idle(BlockCache& c, ThreadAllocator& mine, cudaMemPool_t pool) {
  for (int i = 0; i < mine.block_count; ++i) {
    hand_back_idle(mine.blocks[i].ptr, mine.blocks[i].key);
  }
  mine.block_count = 0;
  for (auto& [key, blocks] : c.idle) {
    for (void* block : blocks) {
      hand_back_idle(block, key);
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

// A block from the shared cache or the pool (the caller holds the mutex; any device may be
// current). out->size, device, stream and stream_key are set.
AOTITorchError take_shared(BlockCache& c, ThreadAllocator& mine, Block* out) {
  if (out->stream_key != kUncachedStream) {
    // Empty lists stay in the map: erasing and re-creating one per allocation and free
    // cost two heap operations a pair.
    auto idle = c.idle.find(key_of(*out));
    if (idle != c.idle.end() && !idle->second.empty()) {
      profile::count("alloc: block reused from the shared cache");
      out->ptr = idle->second.back();
      idle->second.pop_back();
      c.idle_bytes -= out->size;
      return AOTI_SHIM_OK;
    }
  }
  AOTISHIM_PROFILE_STEP("alloc: new block (cudaMallocFromPoolAsync)");
  // The legacy default stream (null) is the current device's: switch for the call.
  DeviceScope scope;
  AOTISHIM_TRY(scope.enter(out->device));
  cudaMemPool_t pool = pool_for(c, out->device);
  void* fresh = nullptr;
  cudaError_t status = allocate(&fresh, out->size, pool, out->stream);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_idle(c, mine, pool);
    status = allocate(&fresh, out->size, pool, out->stream);
  }
  AOTISHIM_TRY(check_status(status, "cudaMallocAsync"));
  out->ptr = fresh;
  return AOTI_SHIM_OK;
}

// Keeps an idle block in the shared cache where it has room (the caller holds the mutex).
bool keep_shared(BlockCache& c, void* block, const IdleKey& key) noexcept {
  if (key.size > kMaxCachedBlock || c.idle_bytes + key.size > kMaxCachedBytes) {
    return false;
  }
  try {
    c.idle[key].push_back(block);
  } catch (...) {
    return false;  // no room to remember it
  }
  c.idle_bytes += key.size;
  profile::count("alloc: block kept in the shared cache");
  return true;
}

// A freed block kept by the shared cache, or freed on its stream (the caller holds the mutex).
AOTITorchError give_shared(BlockCache& c, const Block& block, bool cacheable) {
  if (cacheable && keep_shared(c, block.ptr, key_of(block))) {
    return AOTI_SHIM_OK;
  }
  AOTISHIM_PROFILE_STEP("alloc: cudaFreeAsync");
  DeviceScope scope;
  AOTISHIM_TRY(scope.enter(block.device));
  return check_status(cudaFreeAsync(block.ptr, as_stream(block.stream)), "cudaFreeAsync");
}

// The oldest block of this thread's full list to the shared cache, making room for one more
// (the caller holds the mutex): a list clogged by blocks of destroyed streams, whose keys
// never come back, still takes new ones.
void evict_oldest(BlockCache& c, ThreadAllocator& mine) {
  const ThreadBlock& oldest = mine.blocks[0];
  if (!keep_shared(c, oldest.ptr, oldest.key)) {
    hand_back_idle(oldest.ptr, oldest.key);
  }
  drop_thread_block(mine, 0);
}

// At a thread's exit: its idle blocks to the shared cache (a C++ thread_local destructor,
// so that the library stays loaded until it has run). A block the shared cache has no room
// for stays with the pool unfreed: at the process's exit CUDA may be gone.
struct ThreadExit {
  ThreadExit() = default;
  ThreadExit(const ThreadExit&) = delete;
  ThreadExit& operator=(const ThreadExit&) = delete;
  ~ThreadExit() {
    ThreadAllocator& mine = this_thread_allocator();
    mine.exited = true;
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    for (int i = 0; i < mine.block_count; ++i) {
      (void)keep_shared(c, mine.blocks[i].ptr, mine.blocks[i].key);
    }
    mine.block_count = 0;
  }
};

void hook_thread_exit(ThreadAllocator& mine) {
  thread_local ThreadExit at_exit;
  (void)at_exit;
  mine.exit_hooked = true;
}

}  // namespace

AOTITorchError allocate_block(size_t nbytes, int32_t device, void* stream, Block* out) {
  ThreadAllocator& mine = this_thread_allocator();
  *out = Block{nullptr, stream, stream_key(mine, device, stream), rounded(nbytes), device};
  if (out->stream_key != kUncachedStream) {
    const IdleKey wanted = key_of(*out);
    // The most recently freed first: its memory is the likeliest still in the GPU's L2.
    for (int i = mine.block_count - 1; i >= 0; --i) {
      if (mine.blocks[i].key == wanted) {
        profile::count("alloc: block reused from this thread's list");
        out->ptr = mine.blocks[i].ptr;
        drop_thread_block(mine, i);
        return AOTI_SHIM_OK;
      }
    }
  }
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return take_shared(c, mine, out);
}

AOTITorchError release_block(const Block& block) {
  ThreadAllocator& mine = this_thread_allocator();
  // Reused on its stream only while that stream is the one it was allocated on: not a
  // destroyed stream's recycled handle, not a stream being captured since.
  bool cacheable =
      block.stream_key != kUncachedStream && stream_key(mine, block.device, block.stream) == block.stream_key;
  if (cacheable && block.size <= kMaxThreadBlock && !mine.exited) {
    if (mine.block_count == kThreadBlocks) {
      BlockCache& c = cache();
      std::lock_guard<std::mutex> lock(c.mutex);
      evict_oldest(c, mine);
    }
    if (!mine.exit_hooked) {
      hook_thread_exit(mine);
    }
    mine.blocks[mine.block_count++] = ThreadBlock{block.ptr, key_of(block)};
    profile::count("alloc: block kept in this thread's list");
    return AOTI_SHIM_OK;
  }
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return give_shared(c, block, cacheable);
}

AOTITorchError malloc_async(void** ptr, size_t nbytes, int32_t device, void* stream) {
  Block block;
  AOTISHIM_TRY(allocate_block(nbytes, device, stream, &block));
  BlockCache& c = cache();
  try {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.raw.emplace(block.ptr, block);
  } catch (...) {
    (void)release_block(block);
    return fail_format(AOTI_SHIM_E_OUT_OF_MEMORY, "cudaMallocAsync: no host memory for the block's record");
  }
  *ptr = block.ptr;
  return AOTI_SHIM_OK;
}

AOTITorchError free_async(void* ptr, int32_t device, void* stream) {
  BlockCache& c = cache();
  Block block;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto found = c.raw.find(ptr);
    if (found == c.raw.end()) {
      // Not ours: the caller's stream is all we know.
      AOTISHIM_PROFILE_STEP("alloc: cudaFreeAsync (a block not ours)");
      DeviceScope scope;
      AOTISHIM_TRY(scope.enter(device));
      return check_status(cudaFreeAsync(ptr, as_stream(stream)), "cudaFreeAsync");
    }
    block = found->second;
    c.raw.erase(found);
  }
  return release_block(block);
}

void remember_stream(uint64_t guard_id, int32_t device, void* stream) noexcept {
  ThreadAllocator& mine = this_thread_allocator();
  if (mine.stream_count < kMaxKnownStreams && !is_legacy(stream)) {
    // Read lazily, at the first allocation or free: a guard whose run allocates nothing
    // asks nothing.
    mine.streams[mine.stream_count++] = KnownStream{guard_id, stream, 0, device, false};
  }
}

void forget_stream(uint64_t guard_id) noexcept {
  ThreadAllocator& mine = this_thread_allocator();
  for (int i = 0; i < mine.stream_count; ++i) {
    if (mine.streams[i].guard_id == guard_id) {
      for (int j = i + 1; j < mine.stream_count; ++j) {
        mine.streams[j - 1] = mine.streams[j];
      }
      --mine.stream_count;
      return;
    }
  }
}

#else  // !AOTI_SHIM_WITH_CUDA

namespace {
AOTITorchError unavailable(const char* call) {
  return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s: aoti_shim was built without CUDA", call);
}
}  // namespace

AOTITorchError allocate_block(size_t, int32_t, void*, Block*) { return unavailable("cudaMallocAsync"); }
AOTITorchError release_block(const Block&) { return unavailable("cudaFreeAsync"); }
AOTITorchError malloc_async(void**, size_t, int32_t, void*) { return unavailable("cudaMallocAsync"); }
AOTITorchError free_async(void*, int32_t, void*) { return unavailable("cudaFreeAsync"); }
void remember_stream(uint64_t, int32_t, void*) noexcept {}
void forget_stream(uint64_t) noexcept {}

#endif  // AOTI_SHIM_WITH_CUDA

}  // namespace aotishim::cuda
