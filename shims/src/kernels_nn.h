// Device kernels of the convolution and attention fallbacks (kernels_nn.cu, built by nvcc).
// Host-callable launchers; each returns the CUDA status of its launch (0: launched).
#pragma once

#include <cstdint>

namespace aotishim::kernels {

// One attention softmax over rows of raw scores (already scaled by the GEMM), in place
// of a float32 matrix [batch * heads * q_len, k_len] laid out row-major and contiguous.
struct SoftmaxPlan {
  const float* scores = nullptr;
  void* probs = nullptr;   // the same layout, in probs_dtype (c10: 6, 5 or 15); may alias scores
  int32_t probs_dtype = 6;
  int64_t batch = 0, heads = 0, q_len = 0, k_len = 0;
  bool causal = false;     // key s is masked out for query l when s > l (top-left aligned, as torch)
  const void* mask = nullptr;  // additive (float32/16, bfloat16) or bool (true: keep); null: none
  int32_t mask_dtype = 6;
  int64_t mask_strides[4] = {0, 0, 0, 0};  // elements over [b, h, l, s]; 0 broadcasts
  float* lse = nullptr;    // logsumexp per row (natural log); null: not wanted
  int64_t lse_strides[3] = {0, 0, 0};      // elements over [b, h, l]
};

// probs = softmax(scores + mask) per row; a row with every key masked out gets zeros and a
// logsumexp of -inf.
int attention_softmax(const SoftmaxPlan& plan, void* stream);

// out[n, c, ...] += bias[c] over a dense output of `numel` elements (c10 dtype 6, 7, 5 or 15;
// bias of the same dtype, `bias_stride` elements apart): the channel of memory index i is
// (i / inner) % channels (NCHW: inner = spatial size; channels-last: inner = 1).
int add_channel_bias(
    void* out, int32_t dtype, const void* bias, int64_t bias_stride, int64_t numel, int64_t channels, int64_t inner,
    void* stream);

// A 2-D depthwise convolution (groups == input channels == output channels), one thread per
// output element: out[n, c, oh, ow] = sum over (kh, kw) of x[n, c, ih, iw] * w[c, 0, kh, kw],
// accumulated in float32 (float64 for double), any strides of x, w and out (elements, [N, C,
// H, W] order; out's may be channels-last). For the small ones a direct kernel is launch-bound
// anyway, and cuDNN's plan for some 16-bit shapes took 2.3 ms of host time a call (a 5x5
// depthwise convolution of 576 channels at 2x2, run13).
struct DepthwisePlan {
  const void* x = nullptr;
  const void* w = nullptr;
  void* out = nullptr;
  int32_t dtype = 6;  // c10: 6, 7, 5 or 15, of all three
  int64_t out_sizes[4] = {0, 0, 0, 0};
  int64_t x_sizes[4] = {0, 0, 0, 0};
  int64_t x_strides[4] = {0, 0, 0, 0};
  int64_t w_strides[4] = {0, 0, 0, 0};
  int64_t out_strides[4] = {0, 0, 0, 0};
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
};

int depthwise_conv2d(const DepthwisePlan& plan, void* stream);

}  // namespace aotishim::kernels
