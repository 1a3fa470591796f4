// Creating, viewing, cloning and deleting tensors; their attributes; scalars.
#include "tensor.h"

#include <cstring>

using namespace aotishim;

namespace {

// What a new view and a wrapped blob are both given: a known dtype, a valid layout (and the
// elements it spans) and a non-negative storage offset.
AOTITorchError read_view_args(
    int32_t dtype, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    size_t* element, Dims* sizes, Dims* strides, int64_t* span) {
  *element = dtype_size(dtype);
  if (*element == 0) {
    return fail_format(AOTI_SHIM_E_UNKNOWN_DTYPE, "dtype %d is not a known c10::ScalarType", dtype);
  }
  AOTISHIM_TRY(read_layout(ndim, sizes_ptr, strides_ptr, sizes, strides, span));
  if (storage_offset < 0) {
    return fail_format(
        AOTI_SHIM_E_OUT_OF_BOUNDS, "storage offset %lld is negative", static_cast<long long>(storage_offset));
  }
  return AOTI_SHIM_OK;
}

// A view of `base`'s storage with a new layout and dtype, bounds-checked against the storage.
AOTITorchError new_view(
    const Tensor& base, int32_t dtype, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, AtenTensorHandle* ret) {
  AOTISHIM_TRY(require_output(ret, "ret_new_tensor"));
  size_t element = 0;
  // The layout is read straight into the view (freed if a check fails): no Dims moved.
  auto view = std::make_unique<Tensor>();
  int64_t span = 0;
  AOTISHIM_TRY(read_view_args(
      dtype, ndim, sizes_ptr, strides_ptr, storage_offset, &element, &view->sizes, &view->strides, &span));
  if (span > 0) {
    int64_t end = 0;
    int64_t end_bytes = 0;
    if (__builtin_add_overflow(storage_offset, span, &end)) {
      return fail_format(AOTI_SHIM_E_SIZE_OVERFLOW, "view end overflows int64");
    }
    AOTISHIM_TRY(checked_bytes(end, element, &end_bytes));
    if (end_bytes > base.storage->nbytes) {
      return fail_format(
          AOTI_SHIM_E_OUT_OF_BOUNDS, "view needs %lld bytes of a storage of %lld bytes",
          static_cast<long long>(end_bytes), static_cast<long long>(base.storage->nbytes));
    }
  }
  view->storage = base.storage;
  view->storage_offset = storage_offset;
  view->dtype = dtype;
  *ret = to_handle(view.release());
  return AOTI_SHIM_OK;
}

AOTITorchError from_blob(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  AOTISHIM_TRY(require_output(ret, "ret"));
  size_t element = 0;
  Dims sizes;
  Dims strides;
  int64_t span = 0;
  AOTISHIM_TRY(
      read_view_args(dtype, ndim, sizes_ptr, strides_ptr, storage_offset, &element, &sizes, &strides, &span));
  AOTISHIM_TRY(check_device(device_type, device_index));
  if (span > 0 && data == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_ARGUMENT, "data is null for a non-empty tensor");
  }
  int64_t end = 0;
  int64_t nbytes = 0;
  if (__builtin_add_overflow(storage_offset, span, &end)) {
    return fail_format(AOTI_SHIM_E_SIZE_OVERFLOW, "view end overflows int64");
  }
  AOTISHIM_TRY(checked_bytes(end, element, &nbytes));
  auto tensor = std::make_unique<Tensor>();
  tensor->storage = std::make_shared<Storage>();
  tensor->storage->data = data;
  tensor->storage->nbytes = nbytes;
  tensor->storage->device_type = device_type;
  tensor->storage->device_index = device_index;
  tensor->storage->owner = Owner::None;
  tensor->sizes = std::move(sizes);
  tensor->strides = std::move(strides);
  tensor->storage_offset = storage_offset;
  tensor->dtype = dtype;
  *ret = to_handle(tensor.release());
  return AOTI_SHIM_OK;
}

AOTITorchError empty(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype, int32_t device_type,
    int32_t device_index, bool pinned, AtenTensorHandle* ret) {
  AOTISHIM_TRY(require_output(ret, "ret_new_tensor"));
  // As new_view: the layout is read straight into the tensor.
  auto tensor = std::make_unique<Tensor>();
  int64_t span = 0;
  AOTISHIM_TRY(read_layout(ndim, sizes_ptr, strides_ptr, &tensor->sizes, &tensor->strides, &span));
  AOTISHIM_TRY(allocate_tensor_storage(tensor.get(), span, dtype, device_type, device_index, pinned));
  *ret = to_handle(tensor.release());
  return AOTI_SHIM_OK;
}

// Reads a one-element tensor as `dtype` into *out (any device, converting).
AOTITorchError read_item(AtenTensorHandle handle, int32_t dtype, void* out) {
  Tensor* src = nullptr;
  AOTISHIM_TRY(unwrap(handle, &src));
  AOTISHIM_TRY(require_output(out, "ret_value"));
  if (src->numel() != 1) {
    return fail_format(
        AOTI_SHIM_E_SHAPE_MISMATCH, "item() needs one element, the tensor has %lld",
        static_cast<long long>(src->numel()));
  }
  Tensor dst;
  dst.storage = std::make_shared<Storage>();
  dst.storage->data = out;
  dst.storage->nbytes = static_cast<int64_t>(dtype_size(dtype));
  dst.dtype = dtype;
  // One element of any rank reads as a scalar: copy from a 0-dim view of it.
  Tensor scalar;
  scalar.storage = src->storage;
  scalar.storage_offset = src->storage_offset;
  scalar.dtype = src->dtype;
  return copy_tensor(dst, scalar, false);
}

template <typename T>
AOTITorchError scalar_tensor(T value, int32_t dtype, AtenTensorHandle* ret) {
  AOTISHIM_TRY(require_output(ret, "ret_new_tensor"));
  std::unique_ptr<Tensor> tensor;
  AOTISHIM_TRY(new_tensor({}, {}, dtype, kCPU, -1, false, &tensor));
  std::memcpy(tensor->data(), &value, sizeof(T));
  *ret = to_handle(tensor.release());
  return AOTI_SHIM_OK;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_empty_strided(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype, int32_t device_type,
    int32_t device_index, AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch_empty_strided", [&] {
    return empty(ndim, sizes_ptr, strides_ptr, dtype, device_type, device_index, false, ret_new_tensor);
  });
}

AOTITorchError aoti_torch_empty_strided_pinned(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype, int32_t device_type,
    int32_t device_index, AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch_empty_strided_pinned", [&]() -> AOTITorchError {
    if (device_type != kCPU) {
      return fail_format(
          AOTI_SHIM_E_UNSUPPORTED_DEVICE, "pinned memory is host memory: device type %d is not CPU (0)", device_type);
    }
    return empty(ndim, sizes_ptr, strides_ptr, dtype, device_type, device_index, true, ret_new_tensor);
  });
}

AOTITorchError aoti_torch_create_tensor_from_blob(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  return guarded("aoti_torch_create_tensor_from_blob", [&] {
    return from_blob(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type, device_index, ret);
  });
}

AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret, int32_t layout,
    const uint8_t* /*opaque_metadata*/, int64_t /*opaque_metadata_size*/) {
  return guarded("aoti_torch_create_tensor_from_blob_v2", [&]() -> AOTITorchError {
    if (layout != 0) {
      return fail_format(AOTI_SHIM_E_UNSUPPORTED, "layout %d is not strided (0)", layout);
    }
    return from_blob(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type, device_index, ret);
  });
}

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  AOTISHIM_PROFILE_API("aoti_torch_delete_tensor_object");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  delete t;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle, AtenTensorHandle* new_handle) {
  return guarded("aoti_torch_new_tensor_handle", [&]() -> AOTITorchError {
    Tensor* t = nullptr;
    AOTISHIM_TRY(unwrap(orig_handle, &t));
    AOTISHIM_TRY(require_output(new_handle, "new_handle"));
    *new_handle = to_handle(new Tensor(*t));
    return AOTI_SHIM_OK;
  });
}

AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst) {
  return aoti_torch_new_tensor_handle(src, ret_dst);
}

AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst) {
  return guarded("aoti_torch_assign_tensors", [&]() -> AOTITorchError {
    Tensor* s = nullptr;
    Tensor* d = nullptr;
    AOTISHIM_TRY(unwrap(src, &s, "src"));
    AOTISHIM_TRY(unwrap(dst, &d, "dst"));
    *d = *s;
    return AOTI_SHIM_OK;
  });
}

AOTITorchError aoti_torch__alloc_from_pool(
    AtenTensorHandle self, int64_t offset_bytes, int32_t dtype, int64_t ndim, const int64_t* sizes_ptr,
    const int64_t* strides_ptr, AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch__alloc_from_pool", [&]() -> AOTITorchError {
    Tensor* pool = nullptr;
    AOTISHIM_TRY(unwrap(self, &pool, "self"));
    size_t element = dtype_size(dtype);
    if (element == 0) {
      return fail_format(AOTI_SHIM_E_UNKNOWN_DTYPE, "dtype %d is not a known c10::ScalarType", dtype);
    }
    int64_t pool_start = 0;
    int64_t start = 0;
    if (__builtin_mul_overflow(pool->storage_offset, static_cast<int64_t>(pool->element_size()), &pool_start) ||
        __builtin_add_overflow(pool_start, offset_bytes, &start)) {
      return fail_format(AOTI_SHIM_E_SIZE_OVERFLOW, "pool offset overflows int64");
    }
    if (offset_bytes < 0 || start % static_cast<int64_t>(element) != 0) {
      return fail_format(
          AOTI_SHIM_E_OUT_OF_BOUNDS, "offset %lld bytes is negative or not a multiple of the element size %zu",
          static_cast<long long>(offset_bytes), element);
    }
    return new_view(
        *pool, dtype, ndim, sizes_ptr, strides_ptr, start / static_cast<int64_t>(element), ret_new_tensor);
  });
}

AOTITorchError aoti_torch__reinterpret_tensor(
    AtenTensorHandle self, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch__reinterpret_tensor", [&]() -> AOTITorchError {
    Tensor* base = nullptr;
    AOTISHIM_TRY(unwrap(self, &base, "self"));
    return new_view(*base, base->dtype, ndim, sizes_ptr, strides_ptr, storage_offset, ret_new_tensor);
  });
}

AOTITorchError aoti_torch_as_strided(
    AtenTensorHandle self, const int64_t* sizes_ptr, const int64_t* strides_ptr, AtenTensorHandle* ret) {
  return guarded("aoti_torch_as_strided", [&]() -> AOTITorchError {
    Tensor* base = nullptr;
    AOTISHIM_TRY(unwrap(self, &base, "self"));
    if (base->dim() > 0 && strides_ptr == nullptr) {
      return fail_format(AOTI_SHIM_E_NULL_ARGUMENT, "strides is null");
    }
    return new_view(*base, base->dtype, base->dim(), sizes_ptr, strides_ptr, base->storage_offset, ret);
  });
}

AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guarded("aoti_torch_clone", [&]() -> AOTITorchError {
    Tensor* src = nullptr;
    AOTISHIM_TRY(unwrap(self, &src, "self"));
    AOTISHIM_TRY(require_output(ret, "ret"));
    std::unique_ptr<Tensor> copy;
    AOTISHIM_TRY(new_tensor(
        src->sizes, contiguous_strides(src->sizes), src->dtype, src->device_type(), src->device_index(), false,
        &copy));
    AOTISHIM_TRY(copy_tensor(*copy, *src, true));
    *ret = to_handle(copy.release());
    return AOTI_SHIM_OK;
  });
}

AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guarded("aoti_torch_clone_preserve_strides", [&]() -> AOTITorchError {
    Tensor* src = nullptr;
    AOTISHIM_TRY(unwrap(self, &src, "self"));
    AOTISHIM_TRY(require_output(ret, "ret"));
    // Copy the whole span the view reaches, then view it with the same strides.
    int64_t span = 0;
    AOTISHIM_TRY(span_elements(src->sizes, src->strides, &span));
    std::unique_ptr<Tensor> copy;
    AOTISHIM_TRY(new_tensor({span}, {1}, src->dtype, src->device_type(), src->device_index(), false, &copy));
    Tensor flat_src = *src;
    flat_src.sizes = {span};
    flat_src.strides = {1};
    AOTISHIM_TRY(copy_tensor(*copy, flat_src, true));
    copy->sizes = src->sizes;
    copy->strides = src->strides;
    *ret = to_handle(copy.release());
    return AOTI_SHIM_OK;
  });
}

AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking) {
  return guarded("aoti_torch_copy_", [&]() -> AOTITorchError {
    Tensor* d = nullptr;
    Tensor* s = nullptr;
    AOTISHIM_TRY(unwrap(self, &d, "self"));
    AOTISHIM_TRY(unwrap(src, &s, "src"));
    return copy_tensor(*d, *s, non_blocking != 0);
  });
}

AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst) {
  return aoti_torch_copy_(dst, src, 0);
}

AOTITorchError aoti_torch_zero_(AtenTensorHandle self) {
  return guarded("aoti_torch_zero_", [&]() -> AOTITorchError {
    Tensor* t = nullptr;
    AOTISHIM_TRY(unwrap(self, &t, "self"));
    // All-zero bytes are zero in every dtype: broadcast one zero element.
    alignas(16) unsigned char zero[16] = {};
    Tensor scalar;
    scalar.storage = std::make_shared<Storage>();
    scalar.storage->data = zero;
    scalar.storage->nbytes = sizeof(zero);
    scalar.dtype = t->dtype;
    return copy_tensor(*t, scalar, false);
  });
}

// ---- attributes ----

AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr) {
  AOTISHIM_PROFILE_API("aoti_torch_get_data_ptr");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_data_ptr, "ret_data_ptr"));
  *ret_data_ptr = t->data();
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size) {
  AOTISHIM_PROFILE_API("aoti_torch_get_storage_size");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_size, "ret_size"));
  *ret_size = t->storage->nbytes;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret_numel) {
  AOTISHIM_PROFILE_API("aoti_torch_get_storage_numel");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_numel, "ret_numel"));
  *ret_numel = t->storage->nbytes / static_cast<int64_t>(t->element_size());
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim) {
  AOTISHIM_PROFILE_API("aoti_torch_get_dim");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_dim, "ret_dim"));
  *ret_dim = t->dim();
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel) {
  AOTISHIM_PROFILE_API("aoti_torch_get_numel");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_numel, "ret_numel"));
  *ret_numel = t->numel();
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes) {
  AOTISHIM_PROFILE_API("aoti_torch_get_sizes");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_sizes, "ret_sizes"));
  *ret_sizes = t->sizes.data();
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides) {
  AOTISHIM_PROFILE_API("aoti_torch_get_strides");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_strides, "ret_strides"));
  *ret_strides = t->strides.data();
  return AOTI_SHIM_OK;
}

static AOTITorchError wrap_dim(const Tensor& t, int64_t d, int64_t* out) {
  int64_t wrapped = d < 0 ? d + t.dim() : d;
  if (wrapped < 0 || wrapped >= t.dim()) {
    return fail_format(
        AOTI_SHIM_E_OUT_OF_BOUNDS, "dim %lld is out of range for a %lld-dim tensor", static_cast<long long>(d),
        static_cast<long long>(t.dim()));
  }
  *out = wrapped;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size) {
  AOTISHIM_PROFILE_API("aoti_torch_get_size");
  Tensor* t = nullptr;
  int64_t dim = 0;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_size, "ret_size"));
  AOTISHIM_TRY(wrap_dim(*t, d, &dim));
  *ret_size = t->sizes[dim];
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride) {
  AOTISHIM_PROFILE_API("aoti_torch_get_stride");
  Tensor* t = nullptr;
  int64_t dim = 0;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_stride, "ret_stride"));
  AOTISHIM_TRY(wrap_dim(*t, d, &dim));
  *ret_stride = t->strides[dim];
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype) {
  AOTISHIM_PROFILE_API("aoti_torch_get_dtype");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_dtype, "ret_dtype"));
  *ret_dtype = t->dtype;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type) {
  AOTISHIM_PROFILE_API("aoti_torch_get_device_type");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_device_type, "ret_device_type"));
  *ret_device_type = t->device_type();
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index) {
  AOTISHIM_PROFILE_API("aoti_torch_get_device_index");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_device_index, "ret_device_index"));
  *ret_device_index = t->device_index();
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout) {
  AOTISHIM_PROFILE_API("aoti_torch_get_layout");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_layout, "ret_layout"));
  *ret_layout = 0;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset) {
  AOTISHIM_PROFILE_API("aoti_torch_get_storage_offset");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_storage_offset, "ret_storage_offset"));
  *ret_storage_offset = t->storage_offset;
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous) {
  AOTISHIM_PROFILE_API("aoti_torch_is_contiguous");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_is_contiguous, "ret_is_contiguous"));
  *ret_is_contiguous = t->is_contiguous();
  return AOTI_SHIM_OK;
}

AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined) {
  AOTISHIM_PROFILE_API("aoti_torch_is_defined");
  Tensor* t = nullptr;
  AOTISHIM_TRY(unwrap(tensor, &t));
  AOTISHIM_TRY(require_output(ret_is_defined, "ret_is_defined"));
  *ret_is_defined = true;
  return AOTI_SHIM_OK;
}

// ---- scalars ----

#define AOTISHIM_SCALAR_FUNCTIONS(name, ctype, dtype)                                                  \
  AOTITorchError aoti_torch_item_##name(AtenTensorHandle tensor, ctype* ret_value) {                  \
    return guarded("aoti_torch_item_" #name, [&] { return read_item(tensor, dtype, ret_value); });     \
  }                                                                                                     \
  AOTITorchError aoti_torch_scalar_to_tensor_##name(ctype value, AtenTensorHandle* ret_new_tensor) {  \
    return guarded("aoti_torch_scalar_to_tensor_" #name,                                              \
                   [&] { return scalar_tensor<ctype>(value, dtype, ret_new_tensor); });                \
  }

AOTISHIM_SCALAR_FUNCTIONS(float32, float, 6)
AOTISHIM_SCALAR_FUNCTIONS(float64, double, 7)
AOTISHIM_SCALAR_FUNCTIONS(uint8, uint8_t, 0)
AOTISHIM_SCALAR_FUNCTIONS(uint16, uint16_t, 27)
AOTISHIM_SCALAR_FUNCTIONS(uint32, uint32_t, 28)
AOTISHIM_SCALAR_FUNCTIONS(uint64, uint64_t, 29)
AOTISHIM_SCALAR_FUNCTIONS(int8, int8_t, 1)
AOTISHIM_SCALAR_FUNCTIONS(int16, int16_t, 2)
AOTISHIM_SCALAR_FUNCTIONS(int32, int32_t, 3)
AOTISHIM_SCALAR_FUNCTIONS(int64, int64_t, 4)
AOTISHIM_SCALAR_FUNCTIONS(bool, bool, 11)

}  // extern "C"
