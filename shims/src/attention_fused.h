// The fused attention forward kernel of the CUDA attention fallbacks (attention_fused.cu,
// built by nvcc): one launch per call, the scores never leave the chip (online softmax over
// key tiles). Host-callable; ops_cuda_attention.cpp falls back to its GEMM route where
// fused_attention_takes() says no.
#pragma once

#include <cstdint>

namespace aotishim::kernels {

// One attention call: out[b, h, l, :] = softmax(scale * q[b, h, l] . k[b, g, s] + mask) @ v[b, g, s, :]
// with g = h / (heads / kv_heads). Strides are in elements over [b, h, l] (the last dim is
// unit-stride: fused_attention_takes checks it).
struct FusedPlan {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  int32_t dtype = 6;  // c10: 6 float32, 5 float16, 15 bfloat16 (q, k, v and out alike)
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, k_len = 0, head_dim = 0;
  int64_t q_strides[3] = {0, 0, 0};
  int64_t k_strides[3] = {0, 0, 0};
  int64_t v_strides[3] = {0, 0, 0};
  int64_t out_strides[3] = {0, 0, 0};
  float scale = 1.0f;
  bool causal = false;         // key s is out for query l when s > l (top-left aligned, as torch)
  const void* mask = nullptr;  // additive (the query's dtype) or bool (true: keep); null: none
  int32_t mask_dtype = 6;
  int64_t mask_strides[4] = {0, 0, 0, 0};  // elements over [b, h, l, s]; 0 broadcasts
  float* lse = nullptr;                    // logsumexp per row (natural log); null: not wanted
  int64_t lse_strides[3] = {0, 0, 0};      // elements over [b, h, l]
  // The op's philox seed and offset words (no dropout: zeros), written by the first CTA so
  // that they cost no launch of their own; null: none. At most 4 words.
  uint64_t* zeros = nullptr;
  int32_t zero_count = 0;
  // Whether the Hopper kernels (attention_hopper.h) may take the call where they can;
  // AOTI_SHIM_ATTENTION_ROUTE=mma says no, to compare the kernels.
  bool hopper = true;
  // Whether the Hopper call may take the warp-specialised kernel (its operands described by
  // TMA tensor maps); AOTI_SHIM_ATTENTION_ROUTE=pipelined says no, so that a test reaches the
  // pipelined kernel, the fallback where the driver refuses a tensor map.
  bool tensor_maps = true;
};

// Whether the fused kernel takes this call: dtype float32, float16 or bfloat16; head dim
// (query/key and value alike) 32, 64, 96 or 128; every operand's last dim unit-stride,
// its base and other strides 16-byte aligned; a device of compute capability 8.0 or newer.
// `device` is the CUDA device the call runs on.
bool fused_attention_takes(const FusedPlan& plan, int device);

// Launches the kernel on `stream` of CUDA device `device`: the Hopper kernel where it takes
// the call, else the mma.sync kernel. Returns the CUDA status of the launch (0: launched).
int fused_attention(const FusedPlan& plan, int device, void* stream);

}  // namespace aotishim::kernels
