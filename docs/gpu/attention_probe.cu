// The attention kernels' tiles, side by side (docs/gpu/attention_probe.py builds this once
// per dtype, with -DPROBE_T=float|__half|__nv_bfloat16, for sm_90a). It includes the shims'
// kernel sources, so every variant is a committed kernel at another template argument: the
// mma.sync kernel's tiles and the Hopper kernel's key tiles.
#include "../../shims/src/attention_fused.cu"
#include "../../shims/src/attention_hopper.cu"

namespace probe {
using aotishim::kernels::FusedPlan;
using namespace aotishim::kernels;
using namespace aotishim::kernels::device;

template <int D>
int run_dim(int variant, const FusedPlan& p, cudaStream_t s) {
  switch (variant) {
    case 0: return launch_kernel<PROBE_T, D, 1, 64, 4, false>(p, s);
    case 1: return launch_kernel<PROBE_T, D, 2, 64, 4, false>(p, s);
    case 2: return launch_kernel<PROBE_T, D, 2, 32, 4, false>(p, s);
    case 3: return launch_kernel<PROBE_T, D, 1, 64, 8, false>(p, s);
    case 4: return launch_kernel<PROBE_T, D, 1, 128, 4, false>(p, s);
    case 5: return launch_kernel<PROBE_T, D, 2, 32, 8, false>(p, s);
    case 6:
    case 7:
    case 8:
    case 9:
      if constexpr (std::is_same_v<PROBE_T, float>) {
        return -4;  // the Hopper kernel is 16-bit only
      } else {
        switch (variant) {
          case 6: return launch_pipelined<PROBE_T, D, 1, 64>(p, s);
          case 7: return launch_pipelined<PROBE_T, D, 1, 128>(p, s);
          case 8: return launch_pipelined<PROBE_T, D, 2, 64>(p, s);
          default: return launch_pipelined<PROBE_T, D, 2, 128>(p, s);
        }
      }
    case 10:
    case 11:
    case 12:
    case 13:
      if constexpr (std::is_same_v<PROBE_T, float>) {
        return -4;
      } else {
        switch (variant) {
          case 10: return launch_specialised<PROBE_T, D, 128, 2>(p, 0, s);
          case 11: return launch_specialised<PROBE_T, D, 128, 3>(p, 0, s);
          case 12: return launch_specialised<PROBE_T, D, 64, 3>(p, 0, s);
          default: return launch_specialised<PROBE_T, D, 64, 5>(p, 0, s);
        }
      }
    default: return -1;
  }
}
}  // namespace probe

// Each variant's name for the driver's table, null past the last.
extern "C" const char* probe_variant(int i) {
  static const char* names[] = {"mma 16x64 w4", "mma 32x64 w4", "mma 32x32 w4", "mma 16x64 w8", "mma 16x128 w4",
                                "mma 32x32 w8", "wgmma 1 group x 64 keys", "wgmma 1 group x 128 keys",
                                "wgmma 2 groups x 64 keys", "wgmma 2 groups x 128 keys",
                                "ws 128 keys x 2 stages", "ws 128 keys x 3 stages", "ws 64 keys x 3 stages",
                                "ws 64 keys x 5 stages"};
  return i >= 0 && i < static_cast<int>(sizeof(names) / sizeof(names[0])) ? names[i] : nullptr;
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

// The Hopper kernel's two products alone (its own issue_scores and issue_values steps), for a
// wrong answer to be traced to one of them:
// S = Q K^T (128 x 128 from 128 query rows and 128 keys of D) and O = P V (128 x D from P, 128
// x 128 float32, rounded as the kernel rounds it, and 128 value rows), row-major float32 out.
namespace probe {
constexpr int kThreads = 256, kBlockM = 128, kBlockN = 128;

template <typename T, int D, bool kProduct>
__global__ void __launch_bounds__(kThreads, 1) products(const T* q, const T* k, const float* pin, float* out) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sQ = smem;
  unsigned char* sK = sQ + kBlockM * D * 2;
  const int tid = threadIdx.x, group = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int row_a = group * 64 + warp * 16 + g;
  if constexpr (kProduct) {  // S = Q K^T
    load_swizzled<D, kBlockM, kThreads>(sQ, reinterpret_cast<const unsigned char*>(q), D * 2, kBlockM, tid);
    load_swizzled<D, kBlockN, kThreads>(sK, reinterpret_cast<const unsigned char*>(k), D * 2, kBlockN, tid);
    cp_async_commit();
    cp_async_wait<0>();
    fence_async_shared();
    __syncthreads();
    float acc[kBlockN / 2];
    for (int i = 0; i < kBlockN / 2; ++i) acc[i] = 0.0f;
    issue_scores<T, D, kBlockN>(acc, sQ + group * 64 * 128, kBlockM, sK);  // the shipped kernel's step
    wgmma_wait_all();
    hold(acc);
    for (int i = 0; i < kBlockN / 2; ++i) {
      out[(row_a + ((i & 2) ? 8 : 0)) * kBlockN + (i / 4) * 8 + 2 * t + (i & 1)] = acc[i];
    }
  } else {  // O = P V, V given in k
    load_swizzled<D, kBlockN, kThreads>(sK, reinterpret_cast<const unsigned char*>(k), D * 2, kBlockN, tid);
    cp_async_commit();
    cp_async_wait<0>();
    fence_async_shared();
    __syncthreads();
    uint32_t a[kBlockN / 16][4];
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const float* r0 = pin + row_a * kBlockN + kk * 16 + 2 * t;
      const float* r8 = r0 + 8 * kBlockN;
      a[kk][0] = pack2<T>(r0[0], r0[1]);
      a[kk][1] = pack2<T>(r8[0], r8[1]);
      a[kk][2] = pack2<T>(r0[8], r0[9]);
      a[kk][3] = pack2<T>(r8[8], r8[9]);
    }
    float acc[D / 2];
    for (int i = 0; i < D / 2; ++i) acc[i] = 0.0f;
    issue_values<T, D, kBlockN>(acc, a, sK);  // the shipped kernel's step
    wgmma_wait_all();
    hold(acc);
    for (int i = 0; i < D / 2; ++i) {
      out[(row_a + ((i & 2) ? 8 : 0)) * D + (i / 4) * 8 + 2 * t + (i & 1)] = acc[i];
    }
  }
#endif
}

template <int D, bool kProduct>
int run_products(const void* q, const void* k, const float* pin, float* out, cudaStream_t s) {
  if constexpr (std::is_same_v<PROBE_T, float>) {
    return -4;
  } else {
    constexpr size_t smem = (kBlockM + kBlockN) * D * 2;
    auto kernel = products<PROBE_T, D, kProduct>;
    cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    kernel<<<1, kThreads, smem, s>>>(static_cast<const PROBE_T*>(q), static_cast<const PROBE_T*>(k), pin, out);
    return static_cast<int>(cudaGetLastError());
  }
}
}  // namespace probe

// which: 0 S = Q K^T, 1 O = P V. (run18: the value descriptor's two offsets exchanged faulted.)
extern "C" int probe_products(int which, int head_dim, const void* q, const void* k, const float* pin, float* out,
                              void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (head_dim == 64) {
    return which == 0 ? probe::run_products<64, true>(q, k, pin, out, s) : probe::run_products<64, false>(q, k, pin, out, s);
  }
  return which == 0 ? probe::run_products<128, true>(q, k, pin, out, s) : probe::run_products<128, false>(q, k, pin, out, s);
}
