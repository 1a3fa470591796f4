// CUDA paths: skipped without a GPU. Run on a GPU machine with `aoti_shim_tests cuda`.
#include "helpers.h"

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace testing_helpers;

namespace {

void require_gpu() {
  if (!has_cuda_device()) {
    SKIP("no CUDA device");
  }
}

Owned to_device(AtenTensorHandle host, std::vector<int64_t> strides = {}) {
  Owned device = empty(sizes_of(host), strides, [&] {
    int32_t dtype = 0;
    CHECK_OK(aoti_torch_get_dtype(host, &dtype));
    return dtype;
  }(), kCUDA, 0);
  CHECK_OK(aoti_torch_copy_(device, host, 0));
  return device;
}

template <typename T>
std::vector<T> from_device(AtenTensorHandle device, int32_t dtype) {
  Owned host = empty(sizes_of(device), {}, dtype);
  CHECK_OK(aoti_torch_copy_(host, device, 0));
  return values<T>(host);
}

struct Stream {
  cudaStream_t stream = nullptr;
  Stream() { CHECK_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess); }
  ~Stream() { cudaStreamDestroy(stream); }
};

}  // namespace

TEST(cuda, empty_strided_on_device) {
  require_gpu();
  Owned t = empty({4, 8}, {8, 1}, kFloat32, kCUDA, 0);
  int32_t value = -1;
  CHECK_OK(aoti_torch_get_device_type(t, &value));
  CHECK_EQ(value, kCUDA);
  CHECK_OK(aoti_torch_get_device_index(t, &value));
  CHECK_EQ(value, 0);
  cudaPointerAttributes attributes{};
  CHECK_EQ(cudaPointerGetAttributes(&attributes, data_of<void>(t)), cudaSuccess);
  CHECK_EQ(static_cast<int>(attributes.type), static_cast<int>(cudaMemoryTypeDevice));
  int32_t count = 0;
  CHECK_OK(aoti_shim_cuda_device_count(&count));
  AtenTensorHandle out = sentinel();
  int64_t sizes[] = {4};
  CHECK_EQ(aoti_torch_empty_strided(1, sizes, nullptr, kFloat32, kCUDA, count, &out), AOTI_SHIM_E_DEVICE_INDEX_RANGE);
  int64_t huge[] = {INT64_C(1) << 50};  // 4 PiB
  CHECK_EQ(aoti_torch_empty_strided(1, huge, nullptr, kFloat32, kCUDA, 0, &out), AOTI_SHIM_E_OUT_OF_MEMORY);
  CHECK(out == sentinel());
}

TEST(cuda, copies_between_host_and_device) {
  require_gpu();
  Owned host = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Owned device = to_device(host);
  CHECK_EQ(from_device<float>(device, kFloat32), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // A transposed device layout (memcpy2D with an element pitch) and back.
  Owned column_major = to_device(host, {1, 2});
  CHECK_EQ(from_device<float>(column_major, kFloat32), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Device to device, between layouts.
  Owned row_major = empty({2, 3}, {}, kFloat32, kCUDA, 0);
  CHECK_OK(aoti_torch_copy_(row_major, column_major, 0));
  CHECK_EQ(from_device<float>(row_major, kFloat32), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Converting and broadcasting copies are staged through the host.
  Owned doubles = empty({2, 3}, {}, kFloat64, kCUDA, 0);
  CHECK_OK(aoti_torch_copy_(doubles, device, 0));
  CHECK_EQ(from_device<double>(doubles, kFloat64), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  Owned row = tensor({3}, {7, 8, 9});
  CHECK_OK(aoti_torch_copy_(row_major, row, 0));
  CHECK_EQ(from_device<float>(row_major, kFloat32), (std::vector<float>{7, 8, 9, 7, 8, 9}));
  // A gapped device view: rows of a wider matrix.
  Owned wide = empty({2, 5}, {}, kFloat32, kCUDA, 0);
  CHECK_OK(aoti_torch_zero_(wide));
  Owned block;
  int64_t sizes[] = {2, 3};
  int64_t strides[] = {5, 1};
  CHECK_OK(aoti_torch__reinterpret_tensor(wide, 2, sizes, strides, 1, block.out()));
  CHECK_OK(aoti_torch_copy_(block, host, 0));
  CHECK_EQ(from_device<float>(wide, kFloat32), (std::vector<float>{0, 1, 2, 3, 0, 0, 4, 5, 6, 0}));
}

TEST(cuda, clone_zero_and_item) {
  require_gpu();
  Owned host = tensor({2, 3}, {1, 2, 3, 4, 5, 6}, {1, 2});
  Owned device = to_device(host, {1, 2});
  Owned copy;
  CHECK_OK(aoti_torch_clone(device, copy.out()));
  CHECK_EQ(strides_of(copy), (std::vector<int64_t>{3, 1}));
  CHECK_EQ(from_device<float>(copy, kFloat32), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Owned preserved;
  CHECK_OK(aoti_torch_clone_preserve_strides(device, preserved.out()));
  CHECK_EQ(strides_of(preserved), (std::vector<int64_t>{1, 2}));
  CHECK_EQ(from_device<float>(preserved, kFloat32), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Owned one = to_device(tensor({1}, {3.5f}));
  float value = 0;
  CHECK_OK(aoti_torch_item_float32(one, &value));
  CHECK_EQ(value, 3.5f);
  CHECK_OK(aoti_torch_zero_(copy));
  CHECK_EQ(from_device<float>(copy, kFloat32), (std::vector<float>(6, 0.0f)));
}

// Device bytes of a CUDA tensor, and the same values converted on the host (the reference).
template <typename T>
std::vector<T> host_converted(AtenTensorHandle host_src, int32_t dtype) {
  Owned converted = empty(sizes_of(host_src), {}, dtype);
  CHECK_OK(aoti_torch_copy_(converted, host_src, 0));
  return values<T>(converted);
}

TEST(cuda, kernels_convert_and_broadcast_on_device) {
  require_gpu();
  // Converting copies between two CUDA tensors run kernels.cu's converting kernel; the
  // results must be the host conversion's, bit for bit, through a transposed source.
  Owned host = tensor({2, 4}, {-1.75f, 0.0f, 0.5f, 2.9f, 100.25f, 65520.0f, 1.00390625f, -3.0e-6f}, {1, 2});
  Owned device = to_device(host, {1, 2});
  struct Case {
    int32_t dtype;
    size_t bytes;
  };
  // (Values stay in range of every integer dtype here: out-of-range float to int is undefined.)
  for (Case c : {Case{5, 2}, Case{15, 2}, Case{3, 4}, Case{11, 1}, Case{7, 8}, Case{4, 8}}) {
    Owned out = empty({2, 4}, {}, c.dtype, kCUDA, 0);
    CHECK_OK(aoti_torch_copy_(out, device, 0));
    Owned back = empty({2, 4}, {}, c.dtype);
    CHECK_OK(aoti_torch_copy_(back, out, 0));
    Owned want = empty({2, 4}, {}, c.dtype);
    CHECK_OK(aoti_torch_copy_(want, host, 0));
    CHECK_EQ(std::memcmp(data_of<void>(back), data_of<void>(want), 8 * c.bytes), 0);
  }
  // And back from a converted CUDA tensor into float32 (half to float on the device).
  Owned halves = empty({2, 4}, {}, 5, kCUDA, 0);
  CHECK_OK(aoti_torch_copy_(halves, device, 0));
  Owned floats = empty({2, 4}, {}, kFloat32, kCUDA, 0);
  CHECK_OK(aoti_torch_copy_(floats, halves, 0));
  Owned host_halves = empty({2, 4}, {}, 5);
  CHECK_OK(aoti_torch_copy_(host_halves, host, 0));
  CHECK_EQ(from_device<float>(floats, kFloat32), host_converted<float>(host_halves, kFloat32));
  // A broadcast within the device (a stride-0 source) runs the same-dtype kernel.
  Owned row = to_device(tensor({4}, {7, 8, 9, 10}));
  Owned block = empty({3, 4}, {1, 3}, kFloat32, kCUDA, 0);  // column-major destination
  CHECK_OK(aoti_torch_copy_(block, row, 0));
  CHECK_EQ(from_device<float>(block, kFloat32), (std::vector<float>{7, 8, 9, 10, 7, 8, 9, 10, 7, 8, 9, 10}));
}

TEST(cuda, kernels_fill_and_zero_views) {
  require_gpu();
  // fill_ and zero_ on a gapped CUDA view write the view's elements only (the fill kernel).
  Owned wide = to_device(tensor({2, 5}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  Owned block;
  int64_t sizes[] = {2, 3};
  int64_t strides[] = {5, 1};
  CHECK_OK(aoti_torch__reinterpret_tensor(wide, 2, sizes, strides, 1, block.out()));
  CHECK_OK(aoti_torch_cuda_fill__Scalar(block, 2.5));
  CHECK_EQ(from_device<float>(wide, kFloat32), (std::vector<float>{1, 2.5f, 2.5f, 2.5f, 1, 1, 2.5f, 2.5f, 2.5f, 1}));
  CHECK_OK(aoti_torch_zero_(block));
  CHECK_EQ(from_device<float>(wide, kFloat32), (std::vector<float>{1, 0, 0, 0, 1, 1, 0, 0, 0, 1}));
  // Converted on the host as copy_ converts: half rounding and int truncation.
  Owned half = empty({1000}, {}, 5, kCUDA, 0);
  CHECK_OK(aoti_torch_cuda_fill__Scalar(half, 1.0 / 3.0));
  Owned want = empty({1}, {}, 5);
  CHECK_OK(aoti_torch_cpu_fill__Scalar(want, 1.0 / 3.0));
  CHECK_EQ(from_device<uint16_t>(half, 5), std::vector<uint16_t>(1000, values<uint16_t>(want)[0]));
  Owned longs = empty({3, 700}, {1, 3}, 4, kCUDA, 0);  // transposed, many blocks
  CHECK_OK(aoti_torch_cuda_fill__Scalar(longs, -3.9));
  CHECK_EQ(from_device<int64_t>(longs, 4), std::vector<int64_t>(2100, -3));
}

TEST(cuda, pinned_memory_is_page_locked) {
  require_gpu();
  int64_t sizes[] = {1024};
  Owned pinned;
  CHECK_OK(aoti_torch_empty_strided_pinned(1, sizes, nullptr, kFloat32, kCPU, 0, pinned.out()));
  cudaPointerAttributes attributes{};
  CHECK_EQ(cudaPointerGetAttributes(&attributes, data_of<void>(pinned)), cudaSuccess);
  CHECK_EQ(static_cast<int>(attributes.type), static_cast<int>(cudaMemoryTypeHost));
  fill<float>(pinned, std::vector<float>(1024, 1.5f));
  Owned device = to_device(pinned);
  CHECK_EQ(from_device<float>(device, kFloat32)[1023], 1.5f);
}

TEST(cuda, stream_guards_and_allocation_streams) {
  require_gpu();
  Stream caller;
  Stream inner;
  aoti_shim::CallerStreamGuard selected(caller.stream);
  void* current = nullptr;
  CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
  CHECK(current == caller.stream);
  CUDAStreamGuardHandle guard = nullptr;
  CHECK_OK(aoti_torch_create_cuda_stream_guard(inner.stream, 0, &guard));
  CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
  CHECK(current == inner.stream);
  // Allocation and copies are ordered on the guard's stream.
  Owned t = to_device(tensor({4}, {1, 2, 3, 4}));
  CHECK_EQ(from_device<float>(t, kFloat32), (std::vector<float>{1, 2, 3, 4}));
  CUDAStreamGuardHandle nested = nullptr;
  CHECK_OK(aoti_torch_create_cuda_stream_guard(nullptr, 0, &nested));
  CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
  CHECK(current == nullptr);
  CHECK_OK(aoti_torch_delete_cuda_stream_guard(nested));
  CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
  CHECK(current == inner.stream);
  // Deleting a guard on another thread is refused and changes nothing here.
  AOTITorchError elsewhere = AOTI_SHIM_OK;
  std::thread([&] { elsewhere = aoti_torch_delete_cuda_stream_guard(guard); }).join();
  CHECK_EQ(elsewhere, AOTI_SHIM_E_INVALID_ARGUMENT);
  CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
  CHECK(current == inner.stream);
  CHECK_OK(aoti_torch_delete_cuda_stream_guard(guard));
  CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
  CHECK(current == caller.stream);
  void* raw = nullptr;
  CHECK_OK(aoti_torch_cuda_caching_allocator_raw_alloc(256, &raw));
  CHECK(raw != nullptr);
  CHECK_OK(aoti_torch_cuda_caching_allocator_raw_delete(raw));
  CHECK_EQ(cudaStreamSynchronize(caller.stream), cudaSuccess);
}

// A thread that exits with a live stream guard may hand its thread id to the next thread
// (glibc reuses thread descriptors): that thread's delete of the old guard is refused, and its
// own guard stays current (a check by thread id took it, and unlinked the new thread's guard).
TEST(cuda, a_guard_left_by_an_exited_thread_is_refused_on_a_later_one) {
  require_gpu();
  Stream left_stream;
  Stream own_stream;
  CUDAStreamGuardHandle left = nullptr;
  AOTITorchError made = AOTI_SHIM_E_FAILURE;
  std::thread([&] { made = aoti_torch_create_cuda_stream_guard(left_stream.stream, 0, &left); }).join();
  CHECK_OK(made);
  AOTITorchError own_made = AOTI_SHIM_E_FAILURE, refused = AOTI_SHIM_OK, own_deleted = AOTI_SHIM_E_FAILURE;
  void* current = nullptr;
  std::thread([&] {
    CUDAStreamGuardHandle own = nullptr;
    own_made = aoti_torch_create_cuda_stream_guard(own_stream.stream, 0, &own);
    refused = aoti_torch_delete_cuda_stream_guard(left);
    (void)aoti_torch_get_current_cuda_stream(0, &current);
    own_deleted = aoti_torch_delete_cuda_stream_guard(own);
  }).join();
  CHECK_OK(own_made);
  CHECK_EQ(refused, AOTI_SHIM_E_INVALID_ARGUMENT);
  CHECK(current == own_stream.stream);
  CHECK_OK(own_deleted);
  // `left` stays alive: its thread is gone, and no other thread may delete it.
}

// Issue 38: a freed block waits for the next request of its size on its own stream,
// known by the stream's CUDA id: a new stream (even one given the same handle back)
// never gets a block another stream may still be using.
TEST(cuda, idle_blocks_are_reused_on_their_own_stream_only) {
  require_gpu();
  auto block_on = [](cudaStream_t stream) {
    aoti_shim::CallerStreamGuard selected(stream);
    Owned t = empty({1000}, {1}, kFloat32, kCUDA, 0);
    return data_of<void>(t);  // freed (kept idle) as t goes
  };
  auto first = std::make_unique<Stream>();
  void* a = block_on(first->stream);
  CHECK(block_on(first->stream) == a);  // reused on the same stream
  Stream other;
  CHECK(block_on(other.stream) != a);   // never another stream's idle block
  cudaStream_t old_handle = first->stream;
  first.reset();                        // destroyed with a block of it idle
  Stream next;
  void* fresh = block_on(next.stream);
  CHECK(fresh != a);  // even where CUDA hands the old handle back
  (void)old_handle;
  // The legacy default stream keeps its own blocks too.
  void* legacy = block_on(nullptr);
  CHECK(block_on(nullptr) == legacy);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(cuda, device_guards) {
  require_gpu();
  int32_t before = -1;
  CHECK_OK(aoti_torch_get_current_device_index(&before));
  int32_t count = 0;
  CHECK_OK(aoti_shim_cuda_device_count(&count));
  int32_t target = count > 1 ? 1 : 0;
  DeviceGuardHandle guard = nullptr;
  CHECK_OK(aoti_torch_create_device_guard(target, &guard));
  int32_t now = -1;
  CHECK_OK(aoti_torch_get_current_device_index(&now));
  CHECK_EQ(now, target);
  CHECK_EQ(aoti_torch_device_guard_set_index(guard, count), AOTI_SHIM_E_DEVICE_INDEX_RANGE);
  CHECK_OK(aoti_torch_delete_device_guard(guard));
  CHECK_OK(aoti_torch_get_current_device_index(&now));
  CHECK_EQ(now, before);
  CUDAGuardHandle cuda_guard = nullptr;
  CHECK_OK(aoti_torch_create_cuda_guard(0, &cuda_guard));
  CHECK_OK(aoti_torch_cuda_guard_set_index(cuda_guard, target));
  CHECK_OK(aoti_torch_delete_cuda_guard(cuda_guard));
  CHECK_OK(aoti_torch_get_current_device_index(&now));
  CHECK_EQ(now, before);
}

// ---- the stream guards' memo (issue 38): a guarded stream's id and capture state are
// read once per guard, not per allocation and free; everything else still asks CUDA.
namespace {

// The profile row of the CUDA queries the block cache makes about a stream.
constexpr const char* kStreamQueries = "cuda: the stream's capture state and id";

// How many times the shims asked CUDA a stream's capture state and id while body ran.
template <typename Body>
uint64_t stream_queries(Body&& body) {
  int32_t was = 0;
  CHECK_OK(aoti_shim_profile_enable(1, &was));
  CHECK_OK(aoti_shim_profile_reset());
  body();
  CHECK_OK(aoti_shim_profile_enable(was, nullptr));
  size_t needed = 0;
  CHECK_OK(aoti_shim_profile_read(nullptr, 0, &needed));
  std::string text(needed, '\0');
  CHECK_OK(aoti_shim_profile_read(text.data(), text.size(), &needed));
  if (text.find("(shim total") == std::string::npos) {
    SKIP("the shims were built without the profile (AOTI_SHIM_PROFILING=OFF)");
  }
  std::istringstream lines(text);
  std::string line;
  const std::string prefix = std::string(kStreamQueries) + "\t";
  while (std::getline(lines, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0) {
      return std::stoull(line.substr(prefix.size()));  // "calls<TAB>ns": stoull stops at the tab
    }
  }
  return 0;
}

CUDAStreamGuardHandle guard_on(cudaStream_t stream) {
  CUDAStreamGuardHandle guard = nullptr;
  CHECK_OK(aoti_torch_create_cuda_stream_guard(stream, 0, &guard));
  return guard;
}

// The block a 1000-float tensor gets on the current stream; freed (kept idle) on return.
void* block_here() {
  Owned t = empty({1000}, {1}, kFloat32, kCUDA, 0);
  return data_of<void>(t);
}

// The same, inside a stream guard of its own on `stream`.
void* block_in_guard(cudaStream_t stream) {
  CUDAStreamGuardHandle guard = guard_on(stream);
  void* block = block_here();
  CHECK_OK(aoti_torch_delete_cuda_stream_guard(guard));
  return block;
}

}  // namespace

TEST(cuda, stream_memo_is_used_inside_a_guard) {
  require_gpu();
  Stream s;
  void* first = block_in_guard(s.stream);
  void* seen[4] = {};
  uint64_t inside = stream_queries([&] {
    CUDAStreamGuardHandle guard = guard_on(s.stream);
    for (void*& block : seen) {
      block = block_here();  // an allocation and a free on s
    }
    CHECK_OK(aoti_torch_delete_cuda_stream_guard(guard));
  });
  CHECK_EQ(inside, uint64_t{1});  // read at the first allocation, then remembered
  for (void* block : seen) {
    CHECK(block == first);  // and the idle block is still reused
  }
  // A guard whose run allocates nothing asks nothing.
  CHECK_EQ(stream_queries([&] { CHECK_OK(aoti_torch_delete_cuda_stream_guard(guard_on(s.stream))); }), uint64_t{0});
  // Without a guard (a caller selection alone) every allocation and free asks.
  uint64_t outside = stream_queries([&] {
    aoti_shim::CallerStreamGuard selected(s.stream);
    for (int i = 0; i < 4; ++i) {
      CHECK(block_here() == first);
    }
  });
  CHECK_EQ(outside, uint64_t{8});
  CHECK_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
}

// A capture begun after the guard is gone is seen: the memo went with the guard. A guard
// made during the capture (as a blob's is when torch captures it) reads "capturing".
TEST(cuda, stream_capture_after_the_guard_is_treated_as_capturing) {
  require_gpu();
  Stream s;
  void* idle = block_in_guard(s.stream);  // kept idle for s, read as "not capturing"
  CHECK_EQ(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  void* selected_block = nullptr;
  {
    aoti_shim::CallerStreamGuard selected(s.stream);
    selected_block = block_here();  // a graph allocation and free, not the idle block
  }
  void* guarded_block = block_in_guard(s.stream);
  cudaGraph_t graph = nullptr;
  CHECK_EQ(cudaStreamEndCapture(s.stream, &graph), cudaSuccess);
  CHECK(graph != nullptr);
  CHECK(selected_block != nullptr && selected_block != idle);
  CHECK(guarded_block != nullptr && guarded_block != idle);
  if (graph != nullptr) {
    CHECK_EQ(cudaGraphDestroy(graph), cudaSuccess);
  }
  CHECK(block_in_guard(s.stream) == idle);  // the capture neither took nor gave idle blocks
  CHECK_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
}

// A stream destroyed with a block idle, then new streams (CUDA may hand the old handle
// back): none gets that block, through a guard's memo or otherwise.
TEST(cuda, a_new_stream_at_a_recycled_handle_gets_no_old_idle_block) {
  require_gpu();
  auto old = std::make_unique<Stream>();
  void* idle = block_in_guard(old->stream);
  CHECK(block_in_guard(old->stream) == idle);
  cudaStream_t old_handle = old->stream;
  old.reset();
  std::vector<std::unique_ptr<Stream>> fresh;
  bool recycled = false;
  for (int i = 0; i < 16 && !recycled; ++i) {
    fresh.push_back(std::make_unique<Stream>());
    recycled = fresh.back()->stream == old_handle;
  }
  for (const auto& stream : fresh) {
    CHECK(block_in_guard(stream->stream) != idle);
    CHECK(block_in_guard(stream->stream) != idle);  // its memo, read afresh, is its own id
  }
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Nested guards each keep their own stream's memo; deleted out of order, a stream whose
// guard is gone is asked again while the other guard's memo stays.
TEST(cuda, nested_guards_keep_and_drop_their_own_memo) {
  require_gpu();
  Stream s1;
  Stream s2;
  void* idle1 = block_in_guard(s1.stream);
  void* idle2 = block_in_guard(s2.stream);
  void* current = nullptr;
  uint64_t nested = stream_queries([&] {
    CUDAStreamGuardHandle outer = guard_on(s1.stream);
    CHECK(block_here() == idle1);  // s1 read once
    CUDAStreamGuardHandle inner = guard_on(s2.stream);
    CHECK(block_here() == idle2);  // s2 read once
    CHECK(block_here() == idle2);
    CHECK_OK(aoti_torch_delete_cuda_stream_guard(inner));
    CHECK(block_here() == idle1);  // the outer memo again: no query
    CHECK_OK(aoti_torch_delete_cuda_stream_guard(outer));
  });
  CHECK_EQ(nested, uint64_t{2});
  uint64_t out_of_order = stream_queries([&] {
    CUDAStreamGuardHandle first = guard_on(s1.stream);
    Owned on_s1 = empty({1000}, {1}, kFloat32, kCUDA, 0);  // s1 read once
    CUDAStreamGuardHandle second = guard_on(s2.stream);
    CHECK_OK(aoti_torch_delete_cuda_stream_guard(first));  // the outer one first
    CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
    CHECK(current == s2.stream);
    CHECK(block_here() == idle2);                           // s2 read once
    CHECK_OK(aoti_torch_delete_tensor_object(on_s1.handle));  // s1's guard is gone: asked
    on_s1.handle = nullptr;
    CHECK_OK(aoti_torch_delete_cuda_stream_guard(second));
  });
  CHECK_EQ(out_of_order, uint64_t{3});
  CHECK_OK(aoti_torch_get_current_cuda_stream(0, &current));
  CHECK(current == nullptr);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// ---- a thread's own idle blocks (issue 38): freed small blocks wait first in a list of the
// freeing thread, taken back by its next allocations with no lock; the shared cache gets a
// list's oldest block when the list is full, and the whole list when its thread exits.
namespace {

// A 1-dim float32 tensor of `floats` on the current stream: its block, freed (kept idle).
void* block_of(int64_t floats) {
  Owned t = empty({floats}, {1}, kFloat32, kCUDA, 0);
  return data_of<void>(t);
}

// Sizes of a distinct rounded block each (the cache rounds to 512 bytes: 128 floats).
int64_t floats_of_size(int i) { return 128 * (i + 1); }

}  // namespace

TEST(cuda, a_threads_idle_blocks_go_to_the_shared_cache_when_it_exits) {
  require_gpu();
  Stream s;
  // The harness's checks are the main thread's: the thread only records what it saw.
  void* freed_by_thread = nullptr;
  void* taken_back = nullptr;
  std::thread([&] {
    CUDAStreamGuardHandle guard = nullptr;
    if (aoti_torch_create_cuda_stream_guard(s.stream, 0, &guard) == AOTI_SHIM_OK) {
      freed_by_thread = block_of(1000);
      taken_back = block_of(1000);
      (void)aoti_torch_delete_cuda_stream_guard(guard);
    }
  }).join();
  CHECK(freed_by_thread != nullptr);
  CHECK(taken_back == freed_by_thread);  // its own list, taken back
  CUDAStreamGuardHandle guard = guard_on(s.stream);
  CHECK(block_of(1000) == freed_by_thread);  // handed to the shared cache as the thread ended
  CHECK_OK(aoti_torch_delete_cuda_stream_guard(guard));
  CHECK_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
}

TEST(cuda, a_full_thread_list_hands_its_oldest_block_to_the_shared_cache) {
  require_gpu();
  Stream s;
  constexpr int kBlocks = 17;  // one more than a thread's list holds
  void* freed[kBlocks] = {};
  std::mutex step;
  std::condition_variable changed;
  bool freed_all = false;
  bool looked = false;
  std::thread other([&] {
    CUDAStreamGuardHandle guard = nullptr;
    if (aoti_torch_create_cuda_stream_guard(s.stream, 0, &guard) == AOTI_SHIM_OK) {
      std::vector<AtenTensorHandle> live(kBlocks, nullptr);
      for (int i = 0; i < kBlocks; ++i) {
        int64_t size = floats_of_size(i), stride = 1;
        if (aoti_torch_empty_strided(1, &size, &stride, kFloat32, kCUDA, 0, &live[i]) == AOTI_SHIM_OK) {
          (void)aoti_torch_get_data_ptr(live[i], &freed[i]);
        }
      }
      // In order: the first is the oldest in the list when the last arrives.
      for (AtenTensorHandle t : live) {
        (void)aoti_torch_delete_tensor_object(t);
      }
    }
    {
      std::unique_lock<std::mutex> lock(step);
      freed_all = true;
      changed.notify_all();
      changed.wait(lock, [&] { return looked; });  // alive while the main thread looks
    }
    if (guard != nullptr) {
      (void)aoti_torch_delete_cuda_stream_guard(guard);
    }
  });
  {
    std::unique_lock<std::mutex> lock(step);
    changed.wait(lock, [&] { return freed_all; });
  }
  for (void* block : freed) {
    CHECK(block != nullptr);
  }
  CUDAStreamGuardHandle guard = guard_on(s.stream);
  CHECK(block_of(floats_of_size(0)) == freed[0]);  // evicted to the shared cache
  for (int i = 1; i < kBlocks; ++i) {
    CHECK(block_of(floats_of_size(i)) != freed[i]);  // still in the other thread's own list
  }
  CHECK_OK(aoti_torch_delete_cuda_stream_guard(guard));
  {
    std::lock_guard<std::mutex> lock(step);
    looked = true;
  }
  changed.notify_all();
  other.join();
  CHECK_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
}
