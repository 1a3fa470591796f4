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

}  // namespace aotishim::kernels
