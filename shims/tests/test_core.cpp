// Constants, creation, lifetime, views, attributes, scalars, grad mode and bad input (CPU).
#include "helpers.h"

#include <cstring>
#include <stdexcept>
#include <string>

using namespace testing_helpers;

TEST(core, constants_use_c10_numbering) {
  CHECK_EQ(aoti_torch_device_type_cpu(), 0);
  CHECK_EQ(aoti_torch_device_type_cuda(), 1);
  CHECK_EQ(aoti_torch_device_type_xpu(), 12);
  CHECK_EQ(aoti_torch_device_type_mps(), 13);
  CHECK_EQ(aoti_torch_device_type_meta(), 14);
  CHECK_EQ(aoti_torch_device_type_privateuse1(), 20);
  CHECK_EQ(aoti_torch_dtype_uint8(), 0);
  CHECK_EQ(aoti_torch_dtype_int8(), 1);
  CHECK_EQ(aoti_torch_dtype_int16(), 2);
  CHECK_EQ(aoti_torch_dtype_int32(), 3);
  CHECK_EQ(aoti_torch_dtype_int64(), 4);
  CHECK_EQ(aoti_torch_dtype_float16(), 5);
  CHECK_EQ(aoti_torch_dtype_float32(), 6);
  CHECK_EQ(aoti_torch_dtype_float64(), 7);
  CHECK_EQ(aoti_torch_dtype_complex32(), 8);
  CHECK_EQ(aoti_torch_dtype_complex64(), 9);
  CHECK_EQ(aoti_torch_dtype_complex128(), 10);
  CHECK_EQ(aoti_torch_dtype_bool(), 11);
  CHECK_EQ(aoti_torch_dtype_bfloat16(), 15);
  CHECK_EQ(aoti_torch_dtype_float8_e5m2(), 23);
  CHECK_EQ(aoti_torch_dtype_float8_e4m3fn(), 24);
  CHECK_EQ(aoti_torch_dtype_float8_e5m2fnuz(), 25);
  CHECK_EQ(aoti_torch_dtype_float8_e4m3fnuz(), 26);
  CHECK_EQ(aoti_torch_dtype_uint16(), 27);
  CHECK_EQ(aoti_torch_dtype_uint32(), 28);
  CHECK_EQ(aoti_torch_dtype_uint64(), 29);
  CHECK_EQ(aoti_torch_dtype_float8_e8m0fnu(), 44);
  CHECK_EQ(aoti_torch_dtype_float4_e2m1fn_x2(), 45);
  CHECK_EQ(aoti_torch_layout_strided(), 0);
  CHECK_EQ(aoti_torch_layout_sparse_coo(), 1);
  CHECK_EQ(aoti_torch_layout_sparse_csr(), 2);
  CHECK_EQ(aoti_torch_layout__mkldnn(), 3);
  CHECK_EQ(aoti_torch_layout_sparse_csc(), 4);
  CHECK_EQ(aoti_torch_layout_sparse_bsr(), 5);
  CHECK_EQ(aoti_torch_layout_sparse_bsc(), 6);
  CHECK_EQ(aoti_torch_layout_jagged(), 7);
  CHECK_EQ(aoti_torch_memory_format_contiguous_format(), 0);
  CHECK_EQ(aoti_torch_memory_format_preserve_format(), 1);
  CHECK_EQ(aoti_torch_memory_format_channels_last(), 2);
  CHECK_EQ(aoti_torch_memory_format_channels_last_3d(), 3);
  CHECK_EQ(aoti_torch_dtype_element_size(aoti_torch_dtype_float32()), 4u);
  CHECK_EQ(aoti_torch_dtype_element_size(aoti_torch_dtype_bfloat16()), 2u);
  CHECK_EQ(aoti_torch_dtype_element_size(aoti_torch_dtype_complex128()), 16u);
  CHECK_EQ(aoti_torch_dtype_element_size(aoti_torch_dtype_bool()), 1u);
  CHECK_EQ(aoti_torch_dtype_element_size(12), 0u);  // qint8: not supported
  CHECK_EQ(aoti_torch_dtype_element_size(-1), 0u);
}

TEST(core, empty_strided_contiguous_attributes) {
  int64_t sizes[] = {2, 3, 4};
  int64_t strides[] = {12, 4, 1};
  Owned t;
  CHECK_OK(aoti_torch_empty_strided(3, sizes, strides, kFloat32, kCPU, 0, t.out()));
  CHECK_EQ(sizes_of(t), (std::vector<int64_t>{2, 3, 4}));
  CHECK_EQ(strides_of(t), (std::vector<int64_t>{12, 4, 1}));
  int64_t value = -1;
  CHECK_OK(aoti_torch_get_dim(t, &value));
  CHECK_EQ(value, 3);
  CHECK_OK(aoti_torch_get_numel(t, &value));
  CHECK_EQ(value, 24);
  CHECK_OK(aoti_torch_get_storage_offset(t, &value));
  CHECK_EQ(value, 0);
  CHECK_OK(aoti_torch_get_storage_size(t, &value));
  CHECK_EQ(value, 96);
  CHECK_OK(aoti_torch_get_storage_numel(t, &value));
  CHECK_EQ(value, 24);
  CHECK_OK(aoti_torch_get_size(t, -1, &value));
  CHECK_EQ(value, 4);
  CHECK_OK(aoti_torch_get_stride(t, 0, &value));
  CHECK_EQ(value, 12);
  int32_t small = -1;
  CHECK_OK(aoti_torch_get_dtype(t, &small));
  CHECK_EQ(small, kFloat32);
  CHECK_OK(aoti_torch_get_device_type(t, &small));
  CHECK_EQ(small, kCPU);
  CHECK_OK(aoti_torch_get_device_index(t, &small));
  CHECK_EQ(small, 0);
  CHECK_OK(aoti_torch_get_layout(t, &small));
  CHECK_EQ(small, 0);
  bool flag = false;
  CHECK_OK(aoti_torch_is_contiguous(t, &flag));
  CHECK(flag);
  CHECK_OK(aoti_torch_is_defined(t, &flag));
  CHECK(flag);
  void* data = data_of<void>(t);
  CHECK(data != nullptr);
  CHECK_EQ(reinterpret_cast<uintptr_t>(data) % 64, 0u);
  // The memory is usable end to end.
  std::memset(data, 0x7f, 96);
}

TEST(core, empty_strided_layouts) {
  // Transposed: the storage spans the view, not more.
  Owned t = empty({3, 2}, {1, 3});
  int64_t bytes = 0;
  CHECK_OK(aoti_torch_get_storage_size(t, &bytes));
  CHECK_EQ(bytes, 24);
  bool contiguous = true;
  CHECK_OK(aoti_torch_is_contiguous(t, &contiguous));
  CHECK(!contiguous);
  // Gaps: span is 1 + (2-1)*10 + (3-1)*2 = 15 elements.
  Owned gapped = empty({2, 3}, {10, 2}, 4);
  CHECK_OK(aoti_torch_get_storage_size(gapped, &bytes));
  CHECK_EQ(bytes, 15 * 8);
  // Null strides mean contiguous.
  Owned implicit = empty({2, 5}, {});
  CHECK_EQ(strides_of(implicit), (std::vector<int64_t>{5, 1}));
  // Empty and zero-dim tensors.
  Owned none = empty({0, 7}, {7, 1});
  int64_t numel = -1;
  CHECK_OK(aoti_torch_get_numel(none, &numel));
  CHECK_EQ(numel, 0);
  CHECK_OK(aoti_torch_get_storage_size(none, &bytes));
  CHECK_EQ(bytes, 0);
  Owned scalar;
  CHECK_OK(aoti_torch_empty_strided(0, nullptr, nullptr, kFloat64, kCPU, -1, scalar.out()));
  CHECK_OK(aoti_torch_get_numel(scalar, &numel));
  CHECK_EQ(numel, 1);
  CHECK_OK(aoti_torch_get_storage_size(scalar, &bytes));
  CHECK_EQ(bytes, 8);
  // Every dtype with a byte size can be allocated.
  for (int32_t dtype : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 23, 24, 25, 26, 27, 28, 29, 44, 45}) {
    Owned any = empty({3}, {1}, dtype);
    int32_t got = -1;
    CHECK_OK(aoti_torch_get_dtype(any, &got));
    CHECK_EQ(got, dtype);
    CHECK_OK(aoti_torch_get_storage_size(any, &bytes));
    CHECK_EQ(bytes, static_cast<int64_t>(3 * aoti_torch_dtype_element_size(dtype)));
  }
}

// Calls empty_strided with one bad argument and checks the code, the untouched output and the message.
static void expect_empty_fails(
    int32_t code, int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype, int32_t device_type,
    int32_t device_index) {
  AtenTensorHandle out = sentinel();
  int32_t got = aoti_torch_empty_strided(ndim, sizes, strides, dtype, device_type, device_index, &out);
  CHECK_EQ(got, code);
  CHECK(out == sentinel());
  CHECK(std::strlen(aoti_shim_last_error()) > 0);
}

TEST(core, empty_strided_bad_input) {
  int64_t sizes[] = {2, 3};
  int64_t strides[] = {3, 1};
  CHECK_EQ(aoti_torch_empty_strided(2, sizes, strides, kFloat32, kCPU, 0, nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  expect_empty_fails(AOTI_SHIM_E_NEGATIVE_RANK, -1, sizes, strides, kFloat32, kCPU, 0);
  expect_empty_fails(AOTI_SHIM_E_NULL_ARGUMENT, 2, nullptr, strides, kFloat32, kCPU, 0);
  int64_t negative_size[] = {2, -3};
  expect_empty_fails(AOTI_SHIM_E_NEGATIVE_SIZE, 2, negative_size, strides, kFloat32, kCPU, 0);
  int64_t negative_stride[] = {-3, 1};
  expect_empty_fails(AOTI_SHIM_E_NEGATIVE_STRIDE, 2, sizes, negative_stride, kFloat32, kCPU, 0);
  expect_empty_fails(AOTI_SHIM_E_UNKNOWN_DTYPE, 2, sizes, strides, 12, kCPU, 0);
  expect_empty_fails(AOTI_SHIM_E_UNKNOWN_DTYPE, 2, sizes, strides, 99, kCPU, 0);
  expect_empty_fails(AOTI_SHIM_E_UNKNOWN_DTYPE, 2, sizes, strides, -1, kCPU, 0);
  expect_empty_fails(AOTI_SHIM_E_UNSUPPORTED_DEVICE, 2, sizes, strides, kFloat32, 14, 0);
  expect_empty_fails(AOTI_SHIM_E_UNSUPPORTED_DEVICE, 2, sizes, strides, kFloat32, -3, 0);
  expect_empty_fails(AOTI_SHIM_E_DEVICE_INDEX_RANGE, 2, sizes, strides, kFloat32, kCPU, 1);
  expect_empty_fails(AOTI_SHIM_E_DEVICE_INDEX_RANGE, 2, sizes, strides, kFloat32, kCPU, -2);
  // Rejected before CUDA is asked anything, GPU or not.
  expect_empty_fails(AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX, 2, sizes, strides, kFloat32, kCUDA, -1);
  expect_empty_fails(AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX, 2, sizes, strides, kFloat32, kCUDA, INT32_MIN);
  expect_empty_fails(
      has_cuda_device() ? AOTI_SHIM_E_DEVICE_INDEX_RANGE : AOTI_SHIM_E_CUDA_UNAVAILABLE, 2, sizes, strides, kFloat32,
      kCUDA, 4096);
  int64_t huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
  expect_empty_fails(AOTI_SHIM_E_SIZE_OVERFLOW, 2, huge, nullptr, kFloat32, kCPU, 0);
  int64_t wide_stride[] = {INT64_MAX / 2, 1};
  int64_t two[] = {3, 1};
  expect_empty_fails(AOTI_SHIM_E_SIZE_OVERFLOW, 2, two, wide_stride, kFloat32, kCPU, 0);
  // 2^60 bytes: representable, not allocatable on any machine.
  int64_t exabyte[] = {INT64_C(1) << 58};
  expect_empty_fails(AOTI_SHIM_E_OUT_OF_MEMORY, 1, exabyte, nullptr, kFloat32, kCPU, 0);
}

TEST(core, pinned_memory) {
  int64_t sizes[] = {16};
  AtenTensorHandle out = sentinel();
  int32_t code = aoti_torch_empty_strided_pinned(1, sizes, nullptr, kFloat32, kCUDA, 0, &out);
  CHECK_EQ(code, AOTI_SHIM_E_UNSUPPORTED_DEVICE);
  CHECK(out == sentinel());
  code = aoti_torch_empty_strided_pinned(1, sizes, nullptr, kFloat32, kCPU, 0, &out);
  if (!has_cuda_device()) {
    // Page-locked memory needs a CUDA driver: an error, never a pageable fallback.
    CHECK(code == AOTI_SHIM_E_CUDA_UNAVAILABLE || code == AOTI_SHIM_E_CUDA_ERROR);
    CHECK(out == sentinel());
    return;
  }
  CHECK_OK(code);
  Owned pinned(out);
  bool is_pinned = false;
  CHECK_OK(aoti_shim_is_pinned(data_of<void>(pinned), &is_pinned));
  CHECK(is_pinned);
  fill<float>(pinned, std::vector<float>(16, 2.5f));
  CHECK_EQ(values<float>(pinned)[15], 2.5f);
  Owned pageable = empty({16}, {1});
  CHECK_OK(aoti_shim_is_pinned(data_of<void>(pageable), &is_pinned));
  CHECK(!is_pinned);
}

TEST(core, from_blob_is_non_owning) {
  float buffer[12];
  for (int i = 0; i < 12; ++i) buffer[i] = static_cast<float>(i);
  int64_t sizes[] = {2, 2};
  int64_t strides[] = {4, 1};
  AtenTensorHandle t = nullptr;
  CHECK_OK(aoti_torch_create_tensor_from_blob(buffer, 2, sizes, strides, 5, kFloat32, kCPU, 0, &t));
  CHECK(data_of<float>(t) == buffer + 5);
  CHECK_EQ(values<float>(t), (std::vector<float>{5, 6, 9, 10}));
  int64_t offset = 0;
  CHECK_OK(aoti_torch_get_storage_offset(t, &offset));
  CHECK_EQ(offset, 5);
  CHECK_OK(aoti_torch_delete_tensor_object(t));
  buffer[11] = 42.0f;  // still ours: deleting the handle did not free it
  CHECK_EQ(buffer[11], 42.0f);

  AtenTensorHandle v2 = nullptr;
  CHECK_OK(aoti_torch_create_tensor_from_blob_v2(buffer, 2, sizes, strides, 0, kFloat32, kCPU, 0, &v2, 0, nullptr, 0));
  CHECK_EQ(values<float>(v2), (std::vector<float>{0, 1, 4, 5}));
  CHECK_OK(aoti_torch_delete_tensor_object(v2));

  AtenTensorHandle out = sentinel();
  CHECK_EQ(aoti_torch_create_tensor_from_blob_v2(buffer, 2, sizes, strides, 0, kFloat32, kCPU, 0, &out, 3, nullptr, 0),
           AOTI_SHIM_E_UNSUPPORTED);
  CHECK_EQ(aoti_torch_create_tensor_from_blob(nullptr, 2, sizes, strides, 0, kFloat32, kCPU, 0, &out),
           AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK_EQ(aoti_torch_create_tensor_from_blob(buffer, 2, sizes, strides, -1, kFloat32, kCPU, 0, &out),
           AOTI_SHIM_E_OUT_OF_BOUNDS);
  CHECK_EQ(aoti_torch_create_tensor_from_blob(buffer, 2, sizes, strides, 0, 77, kCPU, 0, &out),
           AOTI_SHIM_E_UNKNOWN_DTYPE);
  CHECK_EQ(aoti_torch_create_tensor_from_blob(buffer, 2, sizes, strides, 0, kFloat32, kCUDA, -5, &out),
           AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX);
  int64_t negative[] = {-2, 2};
  CHECK_EQ(aoti_torch_create_tensor_from_blob(buffer, 2, negative, strides, 0, kFloat32, kCPU, 0, &out),
           AOTI_SHIM_E_NEGATIVE_SIZE);
  CHECK(out == sentinel());
  // Empty tensors may have no data.
  int64_t zero[] = {0};
  CHECK_OK(aoti_torch_create_tensor_from_blob(nullptr, 1, zero, nullptr, 0, kFloat32, kCPU, 0, &out));
  CHECK_OK(aoti_torch_delete_tensor_object(out));
}

TEST(core, handles_share_storage) {
  AtenTensorHandle original = nullptr;
  int64_t sizes[] = {4};
  CHECK_OK(aoti_torch_empty_strided(1, sizes, nullptr, kFloat32, kCPU, 0, &original));
  fill<float>(original, {1, 2, 3, 4});
  Owned second;
  CHECK_OK(aoti_torch_new_tensor_handle(original, second.out()));
  CHECK(data_of<float>(second) == data_of<float>(original));
  Owned third;
  CHECK_OK(aoti_torch_assign_tensors_out(original, third.out()));
  data_of<float>(original)[0] = 10;
  CHECK_OK(aoti_torch_delete_tensor_object(original));
  // The storage lives on while any handle does.
  CHECK_EQ(values<float>(second), (std::vector<float>{10, 2, 3, 4}));
  CHECK_EQ(values<float>(third), (std::vector<float>{10, 2, 3, 4}));

  Owned other = tensor({2}, {7, 8});
  CHECK_OK(aoti_torch_assign_tensors(other, third));
  CHECK_EQ(values<float>(third), (std::vector<float>{7, 8}));
  CHECK_EQ(values<float>(second), (std::vector<float>{10, 2, 3, 4}));
}

TEST(core, null_and_foreign_handles) {
  int64_t value = 0;
  CHECK_EQ(aoti_torch_get_numel(nullptr, &value), AOTI_SHIM_E_NULL_HANDLE);
  CHECK_EQ(aoti_torch_delete_tensor_object(nullptr), AOTI_SHIM_E_NULL_HANDLE);
  // Memory that is not one of our tensors (say, a libtorch at::Tensor*).
  uint64_t foreign[16] = {0x1234, 0x5678};
  auto fake = reinterpret_cast<AtenTensorHandle>(foreign);
  CHECK_EQ(aoti_torch_get_numel(fake, &value), AOTI_SHIM_E_INVALID_HANDLE);
  CHECK_EQ(aoti_torch_delete_tensor_object(fake), AOTI_SHIM_E_INVALID_HANDLE);
  Owned t = empty({2}, {1});
  CHECK_EQ(aoti_torch_get_numel(t, nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK_EQ(aoti_torch_get_sizes(t, nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK_EQ(aoti_torch_get_size(t, 1, &value), AOTI_SHIM_E_OUT_OF_BOUNDS);
  CHECK_EQ(aoti_torch_get_stride(t, -2, &value), AOTI_SHIM_E_OUT_OF_BOUNDS);
  AtenTensorHandle out = sentinel();
  CHECK_EQ(aoti_torch_new_tensor_handle(nullptr, &out), AOTI_SHIM_E_NULL_HANDLE);
  CHECK_EQ(aoti_torch_clone(fake, &out), AOTI_SHIM_E_INVALID_HANDLE);
  CHECK(out == sentinel());
}

TEST(core, reinterpret_and_views) {
  Owned base = tensor({12}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  int64_t sizes[] = {2, 3};
  int64_t strides[] = {1, 4};
  Owned view;
  CHECK_OK(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, 1, view.out()));
  CHECK_EQ(values<float>(view), (std::vector<float>{1, 5, 9, 2, 6, 10}));
  int64_t offset = 0;
  CHECK_OK(aoti_torch_get_storage_offset(view, &offset));
  CHECK_EQ(offset, 1);
  CHECK(data_of<float>(view) == data_of<float>(base) + 1);
  // Past the 12-element storage: 3 + (2-1)*1 + (3-1)*4 + 1 = 13 elements.
  AtenTensorHandle out = sentinel();
  CHECK_EQ(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, 3, &out), AOTI_SHIM_E_OUT_OF_BOUNDS);
  CHECK_EQ(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, -1, &out), AOTI_SHIM_E_OUT_OF_BOUNDS);
  CHECK_EQ(aoti_torch__reinterpret_tensor(base, -2, sizes, strides, 0, &out), AOTI_SHIM_E_NEGATIVE_RANK);
  int64_t bad_strides[] = {1, -4};
  CHECK_EQ(aoti_torch__reinterpret_tensor(base, 2, sizes, bad_strides, 0, &out), AOTI_SHIM_E_NEGATIVE_STRIDE);
  CHECK(out == sentinel());

  // as_strided keeps the offset and needs one size per dim of self.
  Owned strided_view;
  int64_t one_size[] = {3};
  int64_t one_stride[] = {3};
  Owned offset_view;
  int64_t flat[] = {10};
  int64_t unit[] = {1};
  CHECK_OK(aoti_torch__reinterpret_tensor(base, 1, flat, unit, 2, offset_view.out()));
  CHECK_OK(aoti_torch_as_strided(offset_view, one_size, one_stride, strided_view.out()));
  CHECK_EQ(values<float>(strided_view), (std::vector<float>{2, 5, 8}));

  // _alloc_from_pool: a typed view at a byte offset of a byte pool.
  Owned pool = empty({256}, {1}, 0);
  Owned carved;
  int64_t four[] = {4};
  CHECK_OK(aoti_torch__alloc_from_pool(pool, 64, kFloat64, 1, four, unit, carved.out()));
  CHECK(data_of<char>(carved) == data_of<char>(pool) + 64);
  int32_t dtype = 0;
  CHECK_OK(aoti_torch_get_dtype(carved, &dtype));
  CHECK_EQ(dtype, kFloat64);
  CHECK_EQ(aoti_torch__alloc_from_pool(pool, 3, kFloat64, 1, four, unit, &out), AOTI_SHIM_E_OUT_OF_BOUNDS);
  CHECK_EQ(aoti_torch__alloc_from_pool(pool, 240, kFloat64, 1, four, unit, &out), AOTI_SHIM_E_OUT_OF_BOUNDS);
  CHECK(out == sentinel());
}

// Sizes and strides sit inline up to a few dims, on the heap past them: ranks on both
// sides, and copies and assignments between them, keep every value.
TEST(core, ranks_past_the_inline_dims) {
  std::vector<int64_t> sizes(9, 1), strides(9, 2);
  sizes[0] = 3, sizes[8] = 2;
  strides[0] = 4, strides[8] = 1;
  Owned deep = empty(sizes, strides);
  CHECK_EQ(sizes_of(deep), sizes);
  CHECK_EQ(strides_of(deep), strides);
  int64_t value = -1;
  CHECK_OK(aoti_torch_get_numel(deep, &value));
  CHECK_EQ(value, 6);
  CHECK_OK(aoti_torch_get_storage_size(deep, &value));
  CHECK_EQ(value, (1 + 2 * 4 + 1) * 4);
  Owned second;
  CHECK_OK(aoti_torch_new_tensor_handle(deep, second.out()));
  CHECK_EQ(strides_of(second), strides);
  // A 2-dim tensor takes the 9-dim layout and gives it back.
  Owned flat = tensor({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK_OK(aoti_torch_assign_tensors(deep, flat));
  CHECK_EQ(sizes_of(flat), sizes);
  Owned narrow = empty({2}, {1});
  CHECK_OK(aoti_torch_assign_tensors(narrow, second));
  CHECK_EQ(sizes_of(second), (std::vector<int64_t>{2}));
  // A 7-dim view of a 1-dim tensor, bounds checked as any view.
  Owned base = tensor({12}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  std::vector<int64_t> view_sizes = {2, 1, 1, 1, 1, 1, 3}, view_strides = {1, 9, 9, 9, 9, 9, 4};
  Owned view;
  CHECK_OK(aoti_torch__reinterpret_tensor(base, 7, view_sizes.data(), view_strides.data(), 1, view.out()));
  CHECK_EQ(values<float>(view), (std::vector<float>{1, 5, 9, 2, 6, 10}));
  AtenTensorHandle out = sentinel();
  CHECK_EQ(aoti_torch__reinterpret_tensor(base, 7, view_sizes.data(), view_strides.data(), 3, &out),
           AOTI_SHIM_E_OUT_OF_BOUNDS);
  CHECK(out == sentinel());
  Owned copy;
  CHECK_OK(aoti_torch_clone(view, copy.out()));
  CHECK_EQ(strides_of(copy), (std::vector<int64_t>{3, 3, 3, 3, 3, 3, 1}));
  CHECK_EQ(values<float>(copy), (std::vector<float>{1, 5, 9, 2, 6, 10}));
}

TEST(core, clone_and_clone_preserve_strides) {
  // A transposed 2x3 view of a 3x2 buffer.
  Owned source = tensor({2, 3}, {1, 2, 3, 4, 5, 6}, {1, 2});
  Owned copy;
  CHECK_OK(aoti_torch_clone(source, copy.out()));
  CHECK_EQ(strides_of(copy), (std::vector<int64_t>{3, 1}));
  CHECK_EQ(values<float>(copy), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  CHECK(data_of<float>(copy) != data_of<float>(source));

  Owned preserved;
  CHECK_OK(aoti_torch_clone_preserve_strides(source, preserved.out()));
  CHECK_EQ(strides_of(preserved), (std::vector<int64_t>{1, 2}));
  CHECK_EQ(values<float>(preserved), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Gapped layout: only the span is copied, the offset becomes 0.
  Owned base = tensor({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Owned gapped;
  int64_t sizes[] = {2, 2};
  int64_t strides[] = {4, 2};
  CHECK_OK(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, 1, gapped.out()));
  Owned kept;
  CHECK_OK(aoti_torch_clone_preserve_strides(gapped, kept.out()));
  CHECK_EQ(values<float>(kept), (std::vector<float>{1, 3, 5, 7}));
  CHECK_EQ(strides_of(kept), (std::vector<int64_t>{4, 2}));
  int64_t value = -1;
  CHECK_OK(aoti_torch_get_storage_offset(kept, &value));
  CHECK_EQ(value, 0);
  CHECK_OK(aoti_torch_get_storage_size(kept, &value));
  CHECK_EQ(value, 7 * 4);
}

TEST(core, zero_only_touches_the_view) {
  Owned base = tensor({6}, {1, 2, 3, 4, 5, 6});
  Owned view;
  int64_t sizes[] = {3};
  int64_t strides[] = {2};
  CHECK_OK(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, 0, view.out()));
  CHECK_OK(aoti_torch_zero_(view));
  CHECK_EQ(values<float>(base), (std::vector<float>{0, 2, 0, 4, 0, 6}));
}

TEST(core, scalars) {
  Owned f;
  CHECK_OK(aoti_torch_scalar_to_tensor_float32(2.5f, f.out()));
  CHECK_EQ(sizes_of(f).size(), 0u);
  float fv = 0;
  CHECK_OK(aoti_torch_item_float32(f, &fv));
  CHECK_EQ(fv, 2.5f);
  int64_t iv = 0;
  CHECK_OK(aoti_torch_item_int64(f, &iv));  // converts, like torch's item()
  CHECK_EQ(iv, 2);
  Owned i;
  CHECK_OK(aoti_torch_scalar_to_tensor_int64(INT64_C(-9000000000), i.out()));
  CHECK_OK(aoti_torch_item_int64(i, &iv));
  CHECK_EQ(iv, INT64_C(-9000000000));
  Owned b;
  CHECK_OK(aoti_torch_scalar_to_tensor_bool(true, b.out()));
  bool bv = false;
  CHECK_OK(aoti_torch_item_bool(b, &bv));
  CHECK(bv);
  double dv = 0;
  CHECK_OK(aoti_torch_item_float64(b, &dv));
  CHECK_EQ(dv, 1.0);
  Owned u;
  CHECK_OK(aoti_torch_scalar_to_tensor_uint8(200, u.out()));
  uint8_t uv = 0;
  CHECK_OK(aoti_torch_item_uint8(u, &uv));
  CHECK_EQ(uv, 200);
  // One element of any rank is an item, as in torch (seen failing on the H200 first).
  Owned one = tensor({1, 1}, {3.5f});
  CHECK_OK(aoti_torch_item_float32(one, &fv));
  CHECK_EQ(fv, 3.5f);
  Owned two = tensor({2}, {1, 2});
  CHECK_EQ(aoti_torch_item_float32(two, &fv), AOTI_SHIM_E_SHAPE_MISMATCH);
  CHECK_EQ(aoti_torch_item_float32(f, nullptr), AOTI_SHIM_E_NULL_ARGUMENT);
  int32_t dtype = -1;
  CHECK_OK(aoti_torch_get_dtype(u, &dtype));
  CHECK_EQ(dtype, 0);
}

TEST(core, grad_mode_check_and_warn) {
  CHECK(!aoti_torch_grad_mode_is_enabled());
  aoti_torch_grad_mode_set_enabled(false);
  CHECK(!aoti_torch_grad_mode_is_enabled());
  aoti_torch_grad_mode_set_enabled(true);  // an error: reported, grad mode stays off
  CHECK(!aoti_torch_grad_mode_is_enabled());
  CHECK(std::string(aoti_shim_last_error()).find("inference only") != std::string::npos);

  aoti_torch_check(true, "f", "file.cpp", 1, "never");
  bool thrown = false;
  try {
    aoti_torch_check(false, "run", "model.cpp", 42, "shapes differ");
  } catch (const std::runtime_error& error) {
    thrown = std::string(error.what()).find("shapes differ") != std::string::npos &&
             std::string(error.what()).find("model.cpp:42") != std::string::npos;
  }
  CHECK(thrown);
  aoti_torch_warn("run", "model.cpp", 7, "a warning from the test");
}
