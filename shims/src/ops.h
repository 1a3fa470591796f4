// Shared pieces of the CPU fallback ops.
#pragma once

#include "tensor.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace aotishim {

// C[m,n] = alpha * A[m,k] @ B[k,n] + beta * bias (bias optional, strides in elements, 0 = broadcast).
template <typename T>
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  int64_t a_s0 = 0, a_s1 = 0;
  const T* b = nullptr;
  int64_t b_s0 = 0, b_s1 = 0;
  T* c = nullptr;
  int64_t c_s0 = 0, c_s1 = 0;
  const T* bias = nullptr;
  int64_t bias_s0 = 0, bias_s1 = 0;
  T alpha = T(1);
  T beta = T(0);
};

template <typename T>
void gemm(const GemmArgs<T>& args);
template <>
void gemm<float>(const GemmArgs<float>& args);
template <>
void gemm<double>(const GemmArgs<double>& args);

// torch's channels-last stride test (c10 is_channels_last_strides_2d/3d) of a 4- or 5-dim
// tensor (ops_conv.cpp).
bool strides_like_channels_last(const Tensor& t);
// Channels-last strides: C innermost, then the spatial dims from last to first, then N.
Dims channels_last_strides(const Dims& sizes);

// All non-null operands are CPU tensors of one dtype, float32 or float64.
AOTITorchError check_cpu_float(const Tensor* const* operands, size_t count);

template <typename Fn>
void dispatch_float(int32_t dtype, Fn&& fn) {
  if (dtype == 7) {
    fn(double{});
  } else {
    fn(float{});
  }
}

}  // namespace aotishim
