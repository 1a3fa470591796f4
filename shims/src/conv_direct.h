// A direct 2-D convolution for small outputs (conv_direct.cu, built by nvcc).
//
// cuDNN's kernels for a convolution with few output pixels and a long reduction (ResNet-18's
// later layers at batch 2 and 64x64: a 3x3 convolution of 512 channels at 2x2 takes 134 us of
// GPU time in float32, run32) leave most of the GPU idle: they split the work by output only.
// This kernel also splits the reduction (input channels) across the lanes and warps of a
// block and sums the parts in a fixed order, so that the result is the same on every run.
#pragma once

#include <cstdint>

namespace aotishim::kernels {

// out[n, k, p, q] = bias[k] + sum over (c, r, s) of x[n, c, ih, iw] * w[k, c, r, s], with
// ih = p * stride[0] - padding[0] + r * dilation[0] (iw likewise), taps outside x read as 0.
// Sums in float (double for double); every offset any tensor's layout reaches, and every
// stride, fits in int32 (the caller checks: direct_dense in ops_cuda_conv.cpp).
struct DirectConvPlan {
  const void* x = nullptr;
  const void* w = nullptr;
  const void* bias = nullptr;  // null: none
  int64_t bias_stride = 1;
  void* out = nullptr;
  int32_t dtype = 6;  // c10 ScalarType of x, w, bias and out: 6 float, 7 double, 5 half, 15 bfloat16
  int32_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
  int32_t out_channels = 0, out_h = 0, out_w = 0;
  int32_t kernel[2] = {1, 1};
  int32_t stride[2] = {1, 1};
  int32_t padding[2] = {0, 0};
  int32_t dilation[2] = {1, 1};
  int32_t x_strides[4] = {0, 0, 0, 0};    // elements, [N, C, H, W] order
  int32_t w_strides[4] = {0, 0, 0, 0};    // [K, C, R, S]
  int32_t out_strides[4] = {0, 0, 0, 0};  // [N, K, P, Q]
};

int direct_conv2d(const DirectConvPlan& plan, void* stream);

}  // namespace aotishim::kernels
