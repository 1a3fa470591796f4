// The fused attention kernel's tiles, side by side (docs/gpu/attention_probe.py builds this
// once per dtype, with -DPROBE_T=float|__half|__nv_bfloat16). It includes the shims' kernel
// source, so every tile is the committed kernel at another template argument.
#include "../../shims/src/attention_fused.cu"

namespace probe {
using aotishim::kernels::FusedPlan;
using namespace aotishim::kernels;

template <int D>
int run_dim(int variant, const FusedPlan& p, cudaStream_t s) {
  switch (variant) {
    case 0: return launch_kernel<PROBE_T, D, 1, 64, 4, false>(p, s);
    case 1: return launch_kernel<PROBE_T, D, 2, 64, 4, false>(p, s);
    case 2: return launch_kernel<PROBE_T, D, 2, 32, 4, false>(p, s);
    case 3: return launch_kernel<PROBE_T, D, 1, 64, 8, false>(p, s);
    case 4: return launch_kernel<PROBE_T, D, 1, 128, 4, false>(p, s);
    case 5: return launch_kernel<PROBE_T, D, 1, 32, 4, false>(p, s);
    case 6: return launch_kernel<PROBE_T, D, 2, 32, 8, false>(p, s);
    default: return -1;
  }
}
}  // namespace probe

// (MT, BN, warps) of each variant, for the driver's table.
extern "C" int probe_variants(int* out) {
  static const int table[][3] = {{1, 64, 4}, {2, 64, 4}, {2, 32, 4}, {1, 64, 8}, {1, 128, 4}, {1, 32, 4}, {2, 32, 8}};
  int n = sizeof(table) / sizeof(table[0]);
  if (out != nullptr) {
    for (int i = 0; i < n; ++i) {
      out[3 * i] = table[i][0];
      out[3 * i + 1] = table[i][1];
      out[3 * i + 2] = table[i][2];
    }
  }
  return n;
}

// One call: q/k/v/out strides in elements over [b, h, l]; lse [b, h, l] float32 or null.
extern "C" int probe_attention(int variant, int dtype, const void* q, const void* k, const void* v, void* out,
                               float* lse, const int64_t* dims, const int64_t* strides, float scale, int causal,
                               void* stream) {
  aotishim::kernels::FusedPlan p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.out = out;
  p.dtype = dtype;
  p.batch = dims[0];
  p.heads = dims[1];
  p.kv_heads = dims[2];
  p.q_len = dims[3];
  p.k_len = dims[4];
  p.head_dim = dims[5];
  for (int i = 0; i < 3; ++i) {
    p.q_strides[i] = strides[i];
    p.k_strides[i] = strides[3 + i];
    p.v_strides[i] = strides[6 + i];
    p.out_strides[i] = strides[9 + i];
    p.lse_strides[i] = strides[12 + i];
  }
  p.scale = scale;
  p.causal = causal != 0;
  p.lse = lse;
  if (!aotishim::kernels::fused_attention_takes(p, 0)) {
    return -2;
  }
  auto s = static_cast<cudaStream_t>(stream);
  switch (p.head_dim) {
    case 64: return probe::run_dim<64>(variant, p, s);
    case 128: return probe::run_dim<128>(variant, p, s);
    default: return -3;
  }
}
