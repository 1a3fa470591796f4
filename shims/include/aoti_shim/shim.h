/* aoti_shim: the reference slim implementation of AOTInductor's aoti_torch_* C ABI.
 *
 * Every declaration below has exactly the signature of torch's
 * torch/csrc/inductor/aoti_torch/c/shim.h (and generated/c_shim_cpu.h), so a blob
 * compiled against torch's headers links against this library. The list of
 * implemented names is shims/manifest.txt.
 *
 * Names: "aoti_shim_rename.h" is included before any declaration (force-included
 * when the library itself is built: AOTI_SHIM_RENAME_FORCE_INCLUDED). When the
 * translation unit is compiled with -DAOTI_SHIM_SYMBOL_PREFIX=p (the CMake
 * function aoti_shim_prefix() adds it), every aoti_torch_X declared, defined or
 * called becomes p##aoti_torch_X; this library's own functions (aoti_shim_*)
 * get the same prefix. The installed header defaults the prefix to the one the
 * library was built with (see aoti_shim/config.h).
 *
 * Errors: every AOTITorchError function returns 0 on success and one of the
 * AOTI_SHIM_E_* codes below on failure. A failing call leaves its output
 * arguments untouched and creates nothing. aoti_shim_last_error() returns a
 * one-line description of the calling thread's last failure.
 */
#ifndef AOTI_SHIM_SHIM_H
#define AOTI_SHIM_SHIM_H

#include <stddef.h>
#include <stdint.h>

#if __has_include("aoti_shim/config.h")
#include "aoti_shim/config.h"
#endif
#if !defined(AOTI_SHIM_SYMBOL_PREFIX) && defined(AOTI_SHIM_BUILT_PREFIX)
#define AOTI_SHIM_SYMBOL_PREFIX AOTI_SHIM_BUILT_PREFIX
#endif

#ifndef AOTI_SHIM_RENAME_FORCE_INCLUDED
/* For the installed header's consumers: after the built prefix above is known. */
#include "aoti_shim_rename.h"
#elif defined(AOTI_SHIM_SYMBOL_PREFIX) && !defined(AOTI_SHIM_RENAME_H)
/* The library itself is built as a runtime's shims are: the header is force-included. */
#error "aoti_shim: AOTI_SHIM_RENAME_FORCE_INCLUDED is defined, but aoti_shim_rename.h was not force-included"
#endif

/* Our own C ABI gets the same prefix as the torch names. */
#ifdef AOTI_SHIM_SYMBOL_PREFIX
#define AOTI_SHIM_OWN_PASTE_(a, b) a##b
#define AOTI_SHIM_OWN_PASTE(a, b) AOTI_SHIM_OWN_PASTE_(a, b)
#define aoti_shim_last_error AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_last_error)
#define aoti_shim_caller_stream_select AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_caller_stream_select)
#define aoti_shim_caller_stream_restore AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_caller_stream_restore)
#define aoti_shim_caller_stream_get AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_caller_stream_get)
#define aoti_shim_cuda_device_count AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_cuda_device_count)
#define aoti_shim_is_pinned AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_is_pinned)
#define aoti_shim_profile_enable AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_profile_enable)
#define aoti_shim_profile_reset AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_profile_reset)
#define aoti_shim_profile_read AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_profile_read)
#define aoti_shim_profile_probe AOTI_SHIM_OWN_PASTE(AOTI_SHIM_SYMBOL_PREFIX, aoti_shim_profile_probe)
#endif

/* Only the functions below are exported; the library is built with hidden visibility. */
#if defined(__GNUC__)
#define AOTI_SHIM_EXPORT __attribute__((__visibility__("default")))
#else
#define AOTI_SHIM_EXPORT
#endif

/* Error codes (AOTITorchError values). 1 is torch's generic AOTI_TORCH_FAILURE. */
#define AOTI_SHIM_OK 0
#define AOTI_SHIM_E_FAILURE 1                 /* internal error, or an exception from C++ code */
#define AOTI_SHIM_E_NULL_HANDLE 2             /* a tensor or guard handle argument is null */
#define AOTI_SHIM_E_INVALID_HANDLE 3          /* not a live aoti_shim tensor (deleted, or another library's) */
#define AOTI_SHIM_E_NULL_ARGUMENT 4           /* a required pointer argument (output, sizes, data) is null */
#define AOTI_SHIM_E_NEGATIVE_RANK 5           /* ndim < 0 */
#define AOTI_SHIM_E_NEGATIVE_SIZE 6           /* a size is negative */
#define AOTI_SHIM_E_NEGATIVE_STRIDE 7         /* a stride is negative */
#define AOTI_SHIM_E_RANK_MISMATCH 8           /* operands have incompatible numbers of dimensions */
#define AOTI_SHIM_E_SHAPE_MISMATCH 9          /* operands have incompatible sizes */
#define AOTI_SHIM_E_UNKNOWN_DTYPE 10          /* dtype is not a known c10::ScalarType with a byte size */
#define AOTI_SHIM_E_DTYPE_MISMATCH 11         /* operand dtypes differ, or the op does not support the dtype */
#define AOTI_SHIM_E_UNSUPPORTED_DEVICE 12     /* device type other than CPU or CUDA */
#define AOTI_SHIM_E_NEGATIVE_DEVICE_INDEX 13  /* negative device index for a non-CPU device */
#define AOTI_SHIM_E_DEVICE_INDEX_RANGE 14     /* device index past the device count (CPU: other than -1, 0) */
#define AOTI_SHIM_E_DEVICE_MISMATCH 15        /* operands live on different devices */
#define AOTI_SHIM_E_OUT_OF_MEMORY 16          /* host, pinned or device allocation failed */
#define AOTI_SHIM_E_SIZE_OVERFLOW 17          /* element count or byte size overflows int64 */
#define AOTI_SHIM_E_OUT_OF_BOUNDS 18          /* a view reaches past its storage, or a dim index is out of range */
#define AOTI_SHIM_E_UNSUPPORTED 19            /* valid in torch, not supported here (layout, grad mode, dropout...) */
#define AOTI_SHIM_E_INVALID_ARGUMENT 20       /* an op parameter is invalid (groups, conv stride, overlapping output...) */
#define AOTI_SHIM_E_CUDA_UNAVAILABLE 21       /* no CUDA driver or device, or built without CUDA */
#define AOTI_SHIM_E_CUDA_ERROR 22             /* a CUDA runtime call failed */

#ifdef __cplusplus
extern "C" {
#endif

/* Handle types, identical to torch's (redeclaring them next to torch's headers is fine). */
struct AtenTensorOpaque;
using AtenTensorHandle = AtenTensorOpaque*;
using AOTITorchError = int32_t;
#ifndef AOTI_TORCH_SUCCESS
#define AOTI_TORCH_SUCCESS 0
#endif
#ifndef AOTI_TORCH_FAILURE
#define AOTI_TORCH_FAILURE 1
#endif
struct DeviceGuardOpaque;
using DeviceGuardHandle = DeviceGuardOpaque*;
struct CUDAGuardOpaque;
using CUDAGuardHandle = CUDAGuardOpaque*;
struct CUDAStreamGuardOpaque;
using CUDAStreamGuardHandle = CUDAStreamGuardOpaque*;

/* ---- constants, c10 numbering ---- */
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_cpu();
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_cuda();
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_meta();
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_xpu();
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_mps();
AOTI_SHIM_EXPORT int32_t aoti_torch_device_type_privateuse1();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e5m2();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e4m3fn();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e5m2fnuz();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e4m3fnuz();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e8m0fnu();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float4_e2m1fn_x2();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_bfloat16();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float16();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float32();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_float64();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_uint8();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_uint16();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_uint32();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_uint64();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int8();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int16();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int32();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_int64();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_bool();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_complex32();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_complex64();
AOTI_SHIM_EXPORT int32_t aoti_torch_dtype_complex128();
/* Byte size of one element; 0 for an unknown dtype. */
AOTI_SHIM_EXPORT size_t aoti_torch_dtype_element_size(int32_t dtype);
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_strided();
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_sparse_coo();
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_sparse_csr();
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_sparse_csc();
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_sparse_bsr();
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_sparse_bsc();
AOTI_SHIM_EXPORT int32_t aoti_torch_layout__mkldnn();
AOTI_SHIM_EXPORT int32_t aoti_torch_layout_jagged();
AOTI_SHIM_EXPORT int32_t aoti_torch_memory_format_contiguous_format();
AOTI_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last();
AOTI_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last_3d();
AOTI_SHIM_EXPORT int32_t aoti_torch_memory_format_preserve_format();

/* ---- scalars (one-element tensors; CUDA tensors are read with a synchronous copy) ---- */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_float32(AtenTensorHandle tensor, float* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_float64(AtenTensorHandle tensor, double* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_uint8(AtenTensorHandle tensor, uint8_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_uint16(AtenTensorHandle tensor, uint16_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_uint32(AtenTensorHandle tensor, uint32_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_uint64(AtenTensorHandle tensor, uint64_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_int8(AtenTensorHandle tensor, int8_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_int16(AtenTensorHandle tensor, int16_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_int32(AtenTensorHandle tensor, int32_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_int64(AtenTensorHandle tensor, int64_t* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float32(float value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float64(double value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint16(uint16_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint32(uint32_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint64(uint64_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret_new_tensor);

/* ---- grad mode and diagnostics ---- */
/* Always false. Enabling grad mode is an error: reported on stderr and in
 * aoti_shim_last_error(), and grad mode stays off (the function returns void). */
AOTI_SHIM_EXPORT bool aoti_torch_grad_mode_is_enabled();
AOTI_SHIM_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled);
/* With cond false: records msg and throws std::runtime_error, which the blob's
 * run wrapper turns into its error code (torch throws c10::Error there). */
AOTI_SHIM_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg);
/* Writes one line to stderr. */
AOTI_SHIM_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg);

/* ---- lifetime and creation ---- */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle, AtenTensorHandle* new_handle);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch__alloc_from_pool(
    AtenTensorHandle self, int64_t offset_bytes, int32_t dtype, int64_t ndim, const int64_t* sizes_ptr,
    const int64_t* strides_ptr, AtenTensorHandle* ret_new_tensor);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(
    AtenTensorHandle self, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, AtenTensorHandle* ret_new_tensor);
/* sizes and strides of length dim(self). */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_as_strided(
    AtenTensorHandle self, const int64_t* sizes_ptr, const int64_t* strides_ptr, AtenTensorHandle* ret);
/* CPU: 64-byte aligned host memory. CUDA: stream-ordered, from the shims' pool, on the current stream. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype, int32_t device_type,
    int32_t device_index, AtenTensorHandle* ret_new_tensor);
/* CPU tensor in page-locked memory (cudaHostAlloc); never a pageable fallback. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided_pinned(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype, int32_t device_type,
    int32_t device_index, AtenTensorHandle* ret_new_tensor);
/* Non-owning: the caller keeps data alive. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret);
/* layout must be strided; opaque metadata is ignored. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret, int32_t layout,
    const uint8_t* opaque_metadata, int64_t opaque_metadata_size);
/* dst becomes another handle to src's tensor (torch: *dst = *src). */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst);
/* Contiguous copy. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret);
/* Copy with the same strides over a fresh storage of the same span. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret);
/* self <- src: broadcasts src, converts dtype; CPU<->CPU, CPU<->CUDA, CUDA<->CUDA.
 * Copies involving CUDA run on the current stream; non_blocking=0 waits for them. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_zero_(AtenTensorHandle self);
/* self <- value converted to self's dtype (torch's fill_.Scalar); on CUDA a kernel on the
 * current stream writes it. Either name takes a tensor of either device. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fill__Scalar(AtenTensorHandle self, double value);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_fill__Scalar(AtenTensorHandle self, double value);

/* ---- attributes (pointers returned are borrowed from the handle) ---- */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret_numel);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined);

/* ---- devices and streams ---- */
/* Device guards set the current CUDA device and restore the previous one when deleted. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_device_guard(int32_t device_index, DeviceGuardHandle* ret_guard);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_delete_device_guard(DeviceGuardHandle guard);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_device_guard_set_index(DeviceGuardHandle guard, int32_t device_index);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_current_device_index(int32_t* ret_device_index);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index);
/* Makes `stream` (a cudaStream_t) current for device_index on this thread and sets the
 * current device; deleting restores both. Guards must be deleted in reverse order. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(
    void* stream, int32_t device_index, CUDAStreamGuardHandle* ret_guard);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);
/* The current stream of device_index on this thread: the innermost stream guard's
 * stream for that device, else the caller-stream selection, else the default stream (null). */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);
/* Stream-ordered allocation on the current stream of the current device; freed on that same stream. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes, void** ret_ptr);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr);

/* ---- CPU fallback ops (float32 and float64) ---- */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
    double alpha);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
/* 1-3 spatial dims, groups, padding, dilation; transposed convolution is unsupported.
 * The output is channels-last when the input or the weight is (as torch's CPU kernels). */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,
    int64_t groups, AtenTensorHandle* ret0);
/* query [B,H,L,E], key [B,H,S,E], value [B,H,S,Ev]; dropout_p must be 0. ret0 is the
 * output [B,H,L,Ev] laid out as [B,L,H,Ev]; ret1 the float32 logsumexp [B,H,L] laid out as [B,L,H]. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/* Cumulative sum along dim into a new contiguous tensor: integers, bool, float32, float64 in;
 * the result dtype is *dtype if given, else int64 for integral inputs, else the input's. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0);

/* ---- CUDA fallback ops: cuBLAS, loaded at the first call (float32, float64, float16, bfloat16) ---- */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
    double alpha);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_baddbmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1, AtenTensorHandle batch2, double beta,
    double alpha);

/* ---- CUDA convolution: cuDNN 9, loaded at the first call (float32, float64, float16, bfloat16) ----
 * 1-3 spatial dims, stride, padding, dilation, groups, bias, transposed with output_padding.
 * The output is channels-last (3d) when the input or the weight is and the dtype is not
 * float64, else contiguous (1-D convolutions always): the layout torch's CUDA kernels give. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,
    int64_t groups, AtenTensorHandle* ret0);

/* ---- CUDA attention (cuBLAS GEMMs and a softmax kernel): float32, float16, bfloat16 ----
 * query [B,Hq,L,E], key [B,Hk,S,E], value [B,Hk,S,Ev] with Hq a multiple of Hk (grouped-query
 * attention); dropout_p must be 0; is_causal masks key s > query l (top-left aligned); the
 * mask (attn_bias) is additive in the query's dtype or bool (true keeps), broadcast to
 * [B,Hq,L,S]. Outputs, logsumexp included, as torch 2.11's CUDA kernels lay them out. */
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8);

/* ---- this library's own ABI ---- */
/* The calling thread's last error message ("" if none). Valid until the thread's next failing call. */
AOTI_SHIM_EXPORT const char* aoti_shim_last_error(void);

/* The caller-stream selection: per thread, "nothing selected" is distinct from
 * "the default (null) stream selected". CUDA allocations and copies run on the
 * selected stream unless a CUDA stream guard is active. One definer per process:
 * this library. */
typedef struct AotiShimStreamSelection {
  int32_t selected; /* 0: no selection; 1: `stream` is selected (null = default stream) */
  void* stream;     /* a cudaStream_t */
} AotiShimStreamSelection;
/* Selects `stream` on this thread; writes the previous selection to *previous. */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_caller_stream_select(void* stream, AotiShimStreamSelection* previous);
/* Restores a selection returned by select (a {0, NULL} selection clears it). */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_caller_stream_restore(const AotiShimStreamSelection* previous);
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_caller_stream_get(AotiShimStreamSelection* current);
/* Number of CUDA devices, or AOTI_SHIM_E_CUDA_UNAVAILABLE. */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_cuda_device_count(int32_t* ret_count);
/* Whether ptr is page-locked host memory known to CUDA. */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_is_pinned(const void* ptr, bool* ret_pinned);

/* The profile: calls and host time per shim function (and per allocator path and CUDA
 * runtime call inside them), counted per thread and merged when read. On when
 * AOTI_SHIM_PROFILE=1 is in the environment as the library loads (the table then goes
 * to stderr, or to the file AOTI_SHIM_PROFILE_FILE names, at exit), or after
 * aoti_shim_profile_enable(1). Off, each entry point pays one predictable branch. */
/* Switches counting on (on != 0) or off; *previous (may be null) gets the old state. */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_enable(int32_t on, int32_t* previous);
/* Zeroes every counter. */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_reset(void);
/* The counters as text, one "name<TAB>calls<TAB>nanoseconds\n" line each, the most time
 * first; "(shim total: outermost entry points)" sums the calls not made from inside
 * another entry point. Written NUL-terminated into buffer (truncated to size bytes);
 * *needed gets the full length plus one. */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_read(char* buffer, size_t size, size_t* needed);
/* Does nothing inside one profiled entry point ("(profile probe)"), with `steps` empty
 * nested steps and `counts` counted events in it: timed with the profile on, the rows
 * it leaves are what the profile itself adds to an entry point's time, a nested scope's
 * and an event's (bench/shim_latency.py nets the shims' share of them). */
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_probe(int32_t steps, int32_t counts);

#ifdef __cplusplus
} /* extern "C" */

namespace aoti_shim {
/* RAII caller-stream selection: selects in the constructor, restores the previous
 * selection in the destructor, so guards nest. */
class CallerStreamGuard {
 public:
  explicit CallerStreamGuard(void* stream) { aoti_shim_caller_stream_select(stream, &previous_); }
  ~CallerStreamGuard() { aoti_shim_caller_stream_restore(&previous_); }
  CallerStreamGuard(const CallerStreamGuard&) = delete;
  CallerStreamGuard& operator=(const CallerStreamGuard&) = delete;

 private:
  AotiShimStreamSelection previous_{0, nullptr};
};
} // namespace aoti_shim
#endif

#endif /* AOTI_SHIM_SHIM_H */
