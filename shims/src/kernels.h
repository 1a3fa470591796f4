// Device kernels of the shims (kernels.cu, built by nvcc): strided copies with dtype
// conversion and broadcasting, and fills. Host-callable launchers; each returns the
// CUDA status of its launch (0: launched) so the caller maps it to a shim error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aotishim::kernels {

// Dims a launch takes by value; copy_ merges contiguous dims first, so few views need more.
constexpr int kMaxDims = 12;

// A view walked in row-major order: sizes and byte strides of the destination and the
// source (a source stride of 0 broadcasts).
struct StridedPlan {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t dst_strides[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
};

// dst[i] = src[i] of `element` bytes (1, 2, 4, 8 or 16) for every index of the plan.
int copy_same_dtype(char* dst, const char* src, const StridedPlan& plan, int64_t numel, size_t element, void* stream);

// dst[i] = convert(src[i]) between two c10 dtypes, as the host copy_ converts.
// Returns -1 (nothing launched) when either dtype has no device conversion.
int copy_convert(
    char* dst, int32_t dst_dtype, const char* src, int32_t src_dtype, const StridedPlan& plan, int64_t numel,
    void* stream);

// Every element of the destination view (the plan's dst strides) gets `element` bytes of `value`.
int fill(char* dst, const StridedPlan& plan, int64_t numel, const void* value, size_t element, void* stream);

// Whether copy_convert handles this c10 dtype.
bool convertible(int32_t dtype);

}  // namespace aotishim::kernels
