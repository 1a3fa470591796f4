// The slim tensor: errors, dtypes, layout validation, devices and allocation.
#include "tensor.h"

#include "cuda_api.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace aotishim {

// ---- errors ----

// A fixed buffer: recording an error must not allocate (it may report an allocation failure).
thread_local char last_error_text[512] = "";

AOTITorchError fail_format(AOTITorchError code, const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  std::vsnprintf(last_error_text, sizeof(last_error_text), format, args);
  va_end(args);
  return code;
}

AOTITorchError unwrap_failed(AtenTensorHandle handle, const char* what) {
  if (handle == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_HANDLE, "%s handle is null", what);
  }
  return fail_format(
      AOTI_SHIM_E_INVALID_HANDLE, "%s handle %p is not a live aoti_shim tensor", what, static_cast<void*>(handle));
}

AOTITorchError unwrap_optional(const AtenTensorHandle* handle, Tensor** out, const char* what) {
  if (handle == nullptr || *handle == nullptr) {
    *out = nullptr;
    return AOTI_SHIM_OK;
  }
  return unwrap(*handle, out, what);
}

AOTITorchError null_output(const char* what) { return fail_format(AOTI_SHIM_E_NULL_ARGUMENT, "%s is null", what); }

// ---- dtypes (c10::ScalarType numbering) ----

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case 0: return "uint8";
    case 1: return "int8";
    case 2: return "int16";
    case 3: return "int32";
    case 4: return "int64";
    case 5: return "float16";
    case 6: return "float32";
    case 7: return "float64";
    case 8: return "complex32";
    case 9: return "complex64";
    case 10: return "complex128";
    case 11: return "bool";
    case 15: return "bfloat16";
    case 23: return "float8_e5m2";
    case 24: return "float8_e4m3fn";
    case 25: return "float8_e5m2fnuz";
    case 26: return "float8_e4m3fnuz";
    case 27: return "uint16";
    case 28: return "uint32";
    case 29: return "uint64";
    case 44: return "float8_e8m0fnu";
    case 45: return "float4_e2m1fn_x2";
    default: return "unknown";
  }
}

// ---- layout ----

bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<size_t> order(t.sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.strides[a] < t.strides[b]; });
  int64_t expected = 1;
  for (size_t d : order) {
    if (t.sizes[d] == 1) {
      continue;
    }
    if (t.strides[d] != expected) {
      return false;
    }
    expected *= t.sizes[d];
  }
  return true;
}

namespace {

// The contiguous strides of `rank` sizes into `strides`. Unsigned: beside a zero size the
// product of the others may pass INT64_MAX (the tensor is empty, so no stride is ever used
// to reach an element); otherwise it is at most the element count.
void fill_contiguous_strides(const int64_t* sizes, size_t rank, int64_t* strides) {
  uint64_t running = 1;
  for (size_t i = rank; i-- > 0;) {
    strides[i] = static_cast<int64_t>(running);
    running *= sizes[i] > 1 ? static_cast<uint64_t>(sizes[i]) : 1;
  }
}

}  // namespace

Dims contiguous_strides(const Dims& sizes) {
  Dims strides(sizes.size());
  fill_contiguous_strides(sizes.data(), sizes.size(), strides.data());
  return strides;
}

namespace {

// The first of a layout's faults, in the order they are reported.
AOTITorchError layout_fault(int64_t negative_size_dim, const int64_t* sizes, int64_t negative_stride_dim,
                            const int64_t* strides, bool numel_overflow) {
  if (negative_size_dim >= 0) {
    return fail_format(
        AOTI_SHIM_E_NEGATIVE_SIZE, "size %lld of dim %lld is negative",
        static_cast<long long>(sizes[negative_size_dim]), static_cast<long long>(negative_size_dim));
  }
  if (negative_stride_dim >= 0) {
    return fail_format(
        AOTI_SHIM_E_NEGATIVE_STRIDE, "stride %lld of dim %lld is negative",
        static_cast<long long>(strides[negative_stride_dim]), static_cast<long long>(negative_stride_dim));
  }
  if (numel_overflow) {
    return fail_format(AOTI_SHIM_E_SIZE_OVERFLOW, "element count overflows int64");
  }
  return fail_format(AOTI_SHIM_E_SIZE_OVERFLOW, "tensor span overflows int64");
}

}  // namespace

// One pass over the caller's arrays: each value is checked as it is copied, and the element
// count and span are summed on the way. Checking the copies afterwards read back what had
// just been stored, and those loads were a quarter of an empty_strided + delete pair's time
// (perf, 16x16 float32). The element count must fit int64 even where the span is small (zero
// strides); overflow builtins, not a division per dim (a 64-bit idiv per dim was a third of
// this function's time).
AOTITorchError read_layout(
    int64_t ndim, const int64_t* sizes, const int64_t* strides, Dims* out_sizes, Dims* out_strides, int64_t* span) {
  if (ndim < 0) {
    return fail_format(AOTI_SHIM_E_NEGATIVE_RANK, "ndim %lld is negative", static_cast<long long>(ndim));
  }
  if (ndim > 0 && sizes == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_ARGUMENT, "sizes is null for ndim %lld", static_cast<long long>(ndim));
  }
  // Filled in place: a caller's Dims are its own locals, dropped when this fails.
  const auto rank = static_cast<size_t>(ndim);
  int64_t* new_sizes = out_sizes->overwrite(rank);
  int64_t* new_strides = out_strides->overwrite(rank);
  int64_t negative_size_dim = -1;
  int64_t negative_stride_dim = -1;
  int64_t numel = 1;
  bool numel_overflow = false;
  if (strides == nullptr) {
    for (size_t d = 0; d < rank; ++d) {
      const int64_t size = sizes[d];
      new_sizes[d] = size;
      if (size < 0 && negative_size_dim < 0) {
        negative_size_dim = static_cast<int64_t>(d);
      }
      numel_overflow |= __builtin_mul_overflow(numel, size, &numel);
    }
    if (negative_size_dim >= 0 || numel_overflow) {
      return layout_fault(negative_size_dim, sizes, -1, nullptr, numel_overflow);
    }
    fill_contiguous_strides(new_sizes, rank, new_strides);
    *span = numel;  // a contiguous layout spans its elements exactly (0 where a size is 0)
    return AOTI_SHIM_OK;
  }
  int64_t reach = 1;
  bool reach_overflow = false;
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = sizes[d];
    const int64_t stride = strides[d];
    new_sizes[d] = size;
    new_strides[d] = stride;
    if (size < 0 && negative_size_dim < 0) {
      negative_size_dim = static_cast<int64_t>(d);
    }
    if (stride < 0 && negative_stride_dim < 0) {
      negative_stride_dim = static_cast<int64_t>(d);
    }
    numel_overflow |= __builtin_mul_overflow(numel, size, &numel);
    empty |= size == 0;
    // Only a positive size reaches: an empty layout spans nothing and a negative size is
    // refused whatever its span (and INT64_MIN - 1 would overflow).
    if (size > 0) {
      int64_t step = 0;
      reach_overflow |= __builtin_mul_overflow(size - 1, stride, &step);
      reach_overflow |= __builtin_add_overflow(reach, step, &reach);
    }
  }
  if (negative_size_dim >= 0 || negative_stride_dim >= 0 || numel_overflow || (reach_overflow && !empty)) {
    return layout_fault(negative_size_dim, sizes, negative_stride_dim, strides, numel_overflow);
  }
  *span = empty ? 0 : reach;
  return AOTI_SHIM_OK;
}

AOTITorchError span_elements(const Dims& sizes, const Dims& strides, int64_t* out) {
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) {
      *out = 0;
      return AOTI_SHIM_OK;
    }
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || __builtin_add_overflow(span, step, &span)) {
      return fail_format(AOTI_SHIM_E_SIZE_OVERFLOW, "tensor span overflows int64");
    }
  }
  *out = span;
  return AOTI_SHIM_OK;
}

AOTITorchError checked_bytes(int64_t elements, size_t element_size, int64_t* out) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(element_size), &bytes)) {
    return fail_format(AOTI_SHIM_E_SIZE_OVERFLOW, "byte size overflows int64");
  }
  *out = bytes;
  return AOTI_SHIM_OK;
}

// ---- Tensor ----

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t size : sizes) {
    n *= size;
  }
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) {
      return true;
    }
    if (sizes[i] != 1 && strides[i] != expected) {
      return false;
    }
    expected *= sizes[i];
  }
  return true;
}

// ---- devices and allocation ----

AOTITorchError check_device(int32_t device_type, int32_t device_index) {
  if (device_type == kCPU) {
    if (device_index != -1 && device_index != 0) {
      return fail_format(AOTI_SHIM_E_DEVICE_INDEX_RANGE, "CPU device index %d is not -1 or 0", device_index);
    }
    return AOTI_SHIM_OK;
  }
  if (device_type != kCUDA) {
    return fail_format(AOTI_SHIM_E_UNSUPPORTED_DEVICE, "device type %d is neither CPU (0) nor CUDA (1)", device_type);
  }
  // An untrusted program may carry a negative index: never let it reach CUDA.
  if (device_index < 0) {
    return fail_format(AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX, "CUDA device index %d is negative", device_index);
  }
  int32_t count = 0;
  AOTISHIM_TRY(cuda::device_count(&count));
  if (device_index >= count) {
    return fail_format(
        AOTI_SHIM_E_DEVICE_INDEX_RANGE, "CUDA device index %d is past the device count %d", device_index, count);
  }
  return AOTI_SHIM_OK;
}

namespace {
constexpr size_t kHostAlignment = 64;
}  // namespace

Storage::~Storage() {
  if (data == nullptr) {
    return;
  }
  switch (owner) {
    case Owner::None:
      break;
    case Owner::Host:
      std::free(data);
      break;
    case Owner::Pinned:
      (void)cuda::host_free(data);
      break;
    case Owner::Device:
      // Stream-ordered free on the stream the block came from. No device switch here: a
      // block kept for reuse needs no CUDA call at all.
      (void)cuda::release_block(block);
      break;
  }
}

AOTITorchError allocate_storage(
    int64_t nbytes, int32_t device_type, int32_t device_index, bool pinned, std::shared_ptr<Storage>* out) {
  auto storage = std::make_shared<Storage>();
  storage->device_type = device_type;
  storage->device_index = device_index;
  storage->nbytes = nbytes;
  if (device_type == kCPU) {
    if (pinned) {
      // Pinned even when empty: the caller asked for page-locked memory, so CUDA must exist.
      void* ptr = nullptr;
      AOTISHIM_TRY(cuda::host_alloc(&ptr, nbytes > 0 ? static_cast<size_t>(nbytes) : 1));
      storage->data = ptr;
      storage->owner = Owner::Pinned;
    } else if (nbytes > 0) {
      size_t rounded = (static_cast<size_t>(nbytes) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
      void* ptr = nullptr;
      if (posix_memalign(&ptr, kHostAlignment, rounded) != 0) {
        return fail_format(AOTI_SHIM_E_OUT_OF_MEMORY, "cannot allocate %lld bytes of host memory",
                           static_cast<long long>(nbytes));
      }
      storage->data = ptr;
      storage->owner = Owner::Host;
    }
  } else {
    if (nbytes > 0) {
      AOTISHIM_TRY(cuda::allocate_block(
          static_cast<size_t>(nbytes), device_index, current_stream(device_index), &storage->block));
      storage->data = storage->block.ptr;
      storage->owner = Owner::Device;
    }
  }
  *out = std::move(storage);
  return AOTI_SHIM_OK;
}

AOTITorchError allocate_tensor_storage(
    Tensor* tensor, int64_t span, int32_t dtype, int32_t device_type, int32_t device_index, bool pinned) {
  size_t element = dtype_size(dtype);
  if (element == 0) {
    return fail_format(AOTI_SHIM_E_UNKNOWN_DTYPE, "dtype %d is not a known c10::ScalarType", dtype);
  }
  AOTISHIM_TRY(check_device(device_type, device_index));
  int64_t nbytes = 0;
  AOTISHIM_TRY(checked_bytes(span, element, &nbytes));
  AOTISHIM_TRY(allocate_storage(nbytes, device_type, device_index, pinned, &tensor->storage));
  tensor->dtype = dtype;
  return AOTI_SHIM_OK;
}

AOTITorchError new_tensor(
    Dims sizes, Dims strides, int32_t dtype, int32_t device_type,
    int32_t device_index, bool pinned, std::unique_ptr<Tensor>* out) {
  auto tensor = std::make_unique<Tensor>();
  tensor->sizes = std::move(sizes);
  tensor->strides = std::move(strides);
  int64_t span = 0;
  AOTISHIM_TRY(span_elements(tensor->sizes, tensor->strides, &span));
  AOTISHIM_TRY(allocate_tensor_storage(tensor.get(), span, dtype, device_type, device_index, pinned));
  *out = std::move(tensor);
  return AOTI_SHIM_OK;
}

}  // namespace aotishim

extern "C" AOTI_SHIM_EXPORT const char* aoti_shim_last_error(void) { return aotishim::last_error_text; }
