// The slim tensor behind AtenTensorHandle, and the helpers every shim file shares.
#pragma once

#include "aoti_shim/shim.h"
#include "cuda_api.h"
#include "dims.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <string>
#include <vector>

namespace aotishim {

constexpr int32_t kCPU = 0;
constexpr int32_t kCUDA = 1;

enum class Owner {
  None,    // memory belongs to the caller (create_tensor_from_blob)
  Host,    // aligned host memory from posix_memalign
  Pinned,  // page-locked host memory from cudaHostAlloc
  Device,  // device memory from cudaMallocAsync
};

// One allocation shared by every view of it; freed when the last view goes.
struct Storage {
  void* data = nullptr;
  int64_t nbytes = 0;  // bytes known to be addressable from data
  int32_t device_type = kCPU;
  int32_t device_index = 0;
  Owner owner = Owner::None;
  // Owner::Device: the block cache's record of the block (data is its ptr), so that freeing
  // it needs no lookup.
  cuda::Block block;
  // Set where this storage is a part of another's block (Owner::None): the block lives
  // while any part does (the attention ops' philox seed and offset share one allocation).
  std::shared_ptr<Storage> parent;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();
};

// A marker in every live tensor, cleared on deletion: another library's handle (say,
// libtorch's at::Tensor*) is rejected instead of misread, and so is most use after
// delete. It is a tripwire, not a registry: a freed handle whose memory now holds a new
// tensor passes the check.
constexpr uint64_t kTensorMagic = 0x41'4F'54'49'53'48'49'4DULL;  // "AOTISHIM"

struct Tensor {
  uint64_t magic = kTensorMagic;
  std::shared_ptr<Storage> storage;
  Dims sizes;
  Dims strides;
  int64_t storage_offset = 0;  // in elements
  int32_t dtype = 6;

  // User-provided, so make_unique<Tensor>() does not zero the whole object (the inline Dims
  // included: a rep stos that was half of new_view's time) before running the initializers.
  Tensor() noexcept {}
  Tensor(const Tensor&) = default;
  Tensor& operator=(const Tensor&) = default;
  ~Tensor() { magic = 0; }
  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const;
  bool is_contiguous() const;
  size_t element_size() const;
  // Address of element 0 of the view.
  char* data() const;
  int32_t device_type() const { return storage->device_type; }
  int32_t device_index() const { return storage->device_index; }
};

inline AtenTensorHandle to_handle(Tensor* t) { return reinterpret_cast<AtenTensorHandle>(t); }

// ---- errors ----
// Records a printf-style message for aoti_shim_last_error() and returns code.
AOTITorchError fail_format(AOTITorchError code, const char* format, ...) noexcept
    __attribute__((format(printf, 2, 3)));
// Runs body, turning exceptions into error codes: nothing escapes the C ABI.
template <typename Body>
AOTITorchError guarded(const char* where, Body&& body) noexcept;

#define AOTISHIM_TRY(expr)                  \
  do {                                      \
    AOTITorchError aotishim_err_ = (expr);  \
    if (aotishim_err_ != AOTI_SHIM_OK) {    \
      return aotishim_err_;                 \
    }                                       \
  } while (0)

// Resolves a handle to a live tensor. Inline, as require_output: every entry point calls
// them, and three calls were half of get_data_ptr's time; their messages are out of line.
AOTITorchError unwrap_failed(AtenTensorHandle handle, const char* what);
inline AOTITorchError unwrap(AtenTensorHandle handle, Tensor** out, const char* what = "tensor") {
  auto* tensor = reinterpret_cast<Tensor*>(handle);
  if (__builtin_expect(handle == nullptr || tensor->magic != kTensorMagic, 0)) {
    return unwrap_failed(handle, what);
  }
  *out = tensor;
  return AOTI_SHIM_OK;
}
// An optional tensor argument as torchgen passes one: a null pointer, or one to a null
// handle, is None (*out = nullptr); else the handle it points at, resolved.
AOTITorchError unwrap_optional(const AtenTensorHandle* handle, Tensor** out, const char* what);
AOTITorchError null_output(const char* what);
inline AOTITorchError require_output(const void* ptr, const char* what) {
  return __builtin_expect(ptr != nullptr, 1) ? AOTI_SHIM_OK : null_output(what);
}

// The outputs of the ops torchgen generates with ret_pointer_can_be_null (the attention
// ops among them): a blob passes nullptr for an output it never reads, and libtorch's shim
// writes only where it was given a pointer. A tensor nobody asked for is freed here.
inline void deliver(AtenTensorHandle* slot, std::unique_ptr<Tensor> tensor) {
  if (slot != nullptr) {
    *slot = tensor ? to_handle(tensor.release()) : nullptr;
  }
}
inline void deliver(int64_t* slot, int64_t value) {
  if (slot != nullptr) {
    *slot = value;
  }
}

// ---- dtypes ----
// Element byte size, 0 if the dtype is unknown. Inline: Tensor::data() needs it.
inline size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case 0:   // uint8
    case 1:   // int8
    case 11:  // bool
    case 23:  // float8_e5m2
    case 24:  // float8_e4m3fn
    case 25:  // float8_e5m2fnuz
    case 26:  // float8_e4m3fnuz
    case 44:  // float8_e8m0fnu
    case 45:  // float4_e2m1fn_x2 (two values per byte)
      return 1;
    case 2:   // int16
    case 5:   // float16
    case 15:  // bfloat16
    case 27:  // uint16
      return 2;
    case 3:   // int32
    case 6:   // float32
    case 8:   // complex32
    case 28:  // uint32
      return 4;
    case 4:   // int64
    case 7:   // float64
    case 9:   // complex64
    case 29:  // uint64
      return 8;
    case 10:  // complex128
      return 16;
    default:
      return 0;
  }
}
const char* dtype_name(int32_t dtype);

inline size_t Tensor::element_size() const { return dtype_size(dtype); }

inline char* Tensor::data() const {
  if (storage->data == nullptr) {
    return nullptr;
  }
  return static_cast<char*>(storage->data) + storage_offset * static_cast<int64_t>(element_size());
}

// ---- layout checks ----
// Validates ndim/sizes/strides; fills the Dims (contiguous strides when strides is null) and
// *span, the elements the layout spans (span_elements: worked out here to check it, so a
// caller need not again). On failure they hold part of the layout: the caller drops them.
AOTITorchError read_layout(
    int64_t ndim, const int64_t* sizes, const int64_t* strides, Dims* out_sizes, Dims* out_strides, int64_t* span);
Dims contiguous_strides(const Dims& sizes);
// Whether a layout is a permutation of a contiguous one (torch's "non-overlapping and dense").
bool non_overlapping_and_dense(const Tensor& t);
// Elements spanned by a view (0 if empty): 1 + sum (size-1)*stride.
AOTITorchError span_elements(const Dims& sizes, const Dims& strides, int64_t* out);
AOTITorchError checked_bytes(int64_t elements, size_t element_size, int64_t* out);

// ---- devices and allocation ----
// Validates a (device_type, device_index) pair for a new tensor.
AOTITorchError check_device(int32_t device_type, int32_t device_index);
// Allocates an owning storage of nbytes; CUDA memory comes from the current stream.
AOTITorchError allocate_storage(
    int64_t nbytes, int32_t device_type, int32_t device_index, bool pinned, std::shared_ptr<Storage>* out);
// Gives *tensor, its layout set (spanning `span` elements), an owning storage of that span
// and `dtype`; on failure the caller drops it (its storage is unset).
AOTITorchError allocate_tensor_storage(
    Tensor* tensor, int64_t span, int32_t dtype, int32_t device_type, int32_t device_index, bool pinned);
// New owning tensor with the given layout; *out is set only on success. The layout is
// taken by value: a caller done with its Dims moves them in (a heap one is not copied).
AOTITorchError new_tensor(
    Dims sizes, Dims strides, int32_t dtype, int32_t device_type,
    int32_t device_index, bool pinned, std::unique_ptr<Tensor>* out);

// ---- copies ----
// dst <- src with broadcasting and dtype conversion (copy.cpp).
AOTITorchError copy_tensor(const Tensor& dst, const Tensor& src, bool non_blocking);

// ---- streams (streams.cpp) ----
// The stream CUDA work for device_index runs on (a cudaStream_t).
void* current_stream(int32_t device_index);

}  // namespace aotishim

#include "tensor_inl.h"
