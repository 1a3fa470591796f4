// CUDA paths: skipped without a GPU. Run on a GPU machine with `aoti_shim_tests cuda`.
#include "helpers.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <thread>

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
