// CUDA paths: skipped without a GPU. Run on a GPU machine with `aoti_shim_tests cuda`.
#include "helpers.h"

#include <cuda_runtime_api.h>

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
