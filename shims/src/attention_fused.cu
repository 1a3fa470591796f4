// The fused attention forward kernel (issue 38): one CTA per (batch * head, query tile),
// 4 or 8 warps of 16 or 32 query rows each (launch_tile picks). Key and value tiles of BN
// rows are staged in shared memory by cp.async (the next key tile loads while this one's
// softmax and P @ V run); the scores stay in registers, softmax is online (running max and sum per row,
// base 2 with the scale folded in), and the output is normalised once at the end. Causal
// tiles past the diagonal are never loaded; the mask is read per score in the tile.
//
// Tensor cores through mma.sync: float16/bfloat16 as m16n8k16 (float32 accumulate,
// operands by ldmatrix; the probabilities rounded to the inputs' dtype for P @ V, as
// torch's kernels do), float32 as m16n8k8 tf32 three times per product (lo*hi + hi*lo +
// hi*hi, each operand split in a tf32 high part and a tf32 remainder): float32 accuracy,
// the split torch's memory-efficient kernel uses on sm80+ for float32.
#include "attention_fused.h"

#include "attention_device.cuh"
#include "attention_hopper.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math_constants.h>

#include <atomic>
#include <type_traits>

namespace aotishim::kernels {
namespace {

using namespace device;

// Shared-memory rows are padded by 16 bytes: ldmatrix's 8 rows (and the float32 path's
// scalar fragment loads) then fall in distinct banks.
template <typename T>
__host__ __device__ constexpr int row_pad() {
  return 16 / static_cast<int>(sizeof(T));
}

// rows x D elements from global rows `row_stride` apart into shared rows D + pad apart;
// rows at or past `valid` are zero-filled (a zero value row times a zero probability: no NaN).
template <typename T, int D, int Rows, int Threads>
__device__ inline void load_tile(T* smem, const T* gmem, int64_t row_stride, int valid, int tid) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kChunks = D / kVec;
  constexpr int kStride = D + row_pad<T>();
#pragma unroll
  for (int c = tid; c < Rows * kChunks; c += Threads) {
    int r = c / kChunks, col = (c % kChunks) * kVec;
    bool ok = r < valid;
    const T* src = ok ? gmem + r * row_stride + col : gmem;
    cp_async16(smem + r * kStride + col, src, ok ? 16 : 0);
  }
}

__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

// d += a (16x16, row) * b (16x8, col), float32 accumulate.
template <typename T>
__device__ inline void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// d += a (16x8, row) * b (8x8, col) in tf32, float32 accumulate.
__device__ inline void mma1688(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// x = hi + lo, both tf32 (hi rounded to nearest; lo the rounded remainder).
__device__ inline void split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(hi) : "f"(x));
  float rest = x - __uint_as_float(hi);
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(lo) : "f"(rest));
}

__device__ inline float mask_value(const FusedPlan& p, int64_t i) {
  switch (p.mask_dtype) {
    case 11:
      return static_cast<const bool*>(p.mask)[i] ? 0.0f : -CUDART_INF_F;
    case 5:
      return __half2float(static_cast<const __half*>(p.mask)[i]);
    case 15:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p.mask)[i]);
    default:
      return static_cast<const float*>(p.mask)[i];
  }
}

// kWarps warps per CTA, each MT m-tiles of 16 query rows; BN keys per tile. kMask: the
// call has a mask (without one, no per-row mask offsets live in registers).
template <typename T, int D, int MT, int BN, int kWarps, bool kMask>
__global__ void __launch_bounds__(kWarps * 32) fused_attention_kernel(const FusedPlan p, int tiles, int64_t bh_count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kRows = 16 * MT;  // query rows per warp
  constexpr int kBlockM = kRows * kWarps;
  constexpr int kThreads = 32 * kWarps;
  constexpr int kStride = D + row_pad<T>();
  constexpr int kNT = BN / 8;  // score n-tiles of 8 keys
  constexpr int kDT = D / 8;   // output n-tiles of 8 head-dim columns
  constexpr bool kF32 = std::is_same_v<T, float>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + kBlockM * kStride;
  T* sV = sK + BN * kStride;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  if (blockIdx.x == 0 && tid < p.zero_count) {
    p.zeros[tid] = 0;
  }
  // Heavy (late, for causal) query tiles first: they start while the light ones fill in.
  const int64_t linear = blockIdx.x;
  const int tile = tiles - 1 - static_cast<int>(linear / bh_count);
  const int64_t bh = linear % bh_count;
  const int64_t b = bh / p.heads, h = bh % p.heads;
  const int64_t kvh = h / (p.heads / p.kv_heads);
  const int m0 = tile * kBlockM;
  const int lq = static_cast<int>(p.q_len), lk = static_cast<int>(p.k_len);

  const T* qg = static_cast<const T*>(p.q) + b * p.q_strides[0] + h * p.q_strides[1] + m0 * p.q_strides[2];
  const T* kg = static_cast<const T*>(p.k) + b * p.k_strides[0] + kvh * p.k_strides[1];
  const T* vg = static_cast<const T*>(p.v) + b * p.v_strides[0] + kvh * p.v_strides[1];
  const int n_end = p.causal ? min(lk, m0 + kBlockM) : lk;
  const int n_tiles = (n_end + BN - 1) / BN;

  load_tile<T, D, kBlockM, kThreads>(sQ, qg, p.q_strides[2], lq - m0, tid);
  load_tile<T, D, BN, kThreads>(sK, kg, p.k_strides[2], lk, tid);
  cp_async_commit();

  const int wr = warp * kRows;  // this warp's first row in the tile
  const float scale2 = p.scale * kLog2e;
  int64_t mask_base[kMask ? MT : 1][2] = {};
  if constexpr (kMask) {
    int64_t common = b * p.mask_strides[0] + h * p.mask_strides[1];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int row = m0 + wr + mt * 16 + g + 8 * r;
        mask_base[mt][r] = common + static_cast<int64_t>(min(row, lq - 1)) * p.mask_strides[2];
      }
    }
  }

  float o[MT][kDT][4];
  float row_max[MT][2], row_sum[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int i = 0; i < kDT; ++i) {
      o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.0f;
    }
    row_max[mt][0] = row_max[mt][1] = -CUDART_INF_F;
    row_sum[mt][0] = row_sum[mt][1] = 0.0f;
  }

  for (int j = 0; j < n_tiles; ++j) {
    const int n0 = j * BN;
    load_tile<T, D, BN, kThreads>(sV, vg + n0 * p.v_strides[2], p.v_strides[2], lk - n0, tid);
    cp_async_commit();
    cp_async_wait<1>();  // this key tile (and the queries)
    __syncthreads();

    // A warp whose rows all come before this tile's first key (causal) has nothing here.
    const bool idle = p.causal && n0 > m0 + wr + kRows - 1;
    float s[MT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int i = 0; i < kNT; ++i) {
        s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.0f;
      }
    }
    if (!idle) {
      if constexpr (kF32) {
#pragma unroll
        for (int kk = 0; kk < D / 8; ++kk) {
          uint32_t ahi[MT][4], alo[MT][4];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            const float* qa = sQ + (wr + mt * 16 + g) * kStride + kk * 8 + t;
            split_tf32(qa[0], ahi[mt][0], alo[mt][0]);
            split_tf32(qa[8 * kStride], ahi[mt][1], alo[mt][1]);
            split_tf32(qa[4], ahi[mt][2], alo[mt][2]);
            split_tf32(qa[8 * kStride + 4], ahi[mt][3], alo[mt][3]);
          }
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            const float* kb = sK + (nt * 8 + g) * kStride + kk * 8 + t;
            uint32_t bh0, bl0, bh1, bl1;
            split_tf32(kb[0], bh0, bl0);
            split_tf32(kb[4], bh1, bl1);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
              mma1688(s[mt][nt], alo[mt], bh0, bh1);
              mma1688(s[mt][nt], ahi[mt], bl0, bl1);
              mma1688(s[mt][nt], ahi[mt], bh0, bh1);
            }
          }
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          uint32_t qa[MT][4];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            ldmatrix_x4(qa[mt], sQ + (wr + mt * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * kStride + kk * 16 +
                                    (lane / 16) * 8);
          }
#pragma unroll
          for (int nt = 0; nt < kNT; nt += 2) {
            uint32_t kb[4];
            ldmatrix_x4(kb, sK + (nt * 8 + (lane % 8) + (lane / 16) * 8) * kStride + kk * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
              mma16816<T>(s[mt][nt], qa[mt], kb[0], kb[1]);
              mma16816<T>(s[mt][nt + 1], qa[mt], kb[2], kb[3]);
            }
          }
        }
      }
    }
    __syncthreads();  // every warp is done with this key tile
    if (j + 1 < n_tiles) {
      load_tile<T, D, BN, kThreads>(sK, kg + (n0 + BN) * p.k_strides[2], p.k_strides[2], lk - n0 - BN, tid);
    }
    cp_async_commit();  // possibly empty: the wait counts stay the same

    if (!idle) {
      // Scale (base 2), the keys past the end, the causal cut, the mask.
      const bool edge = n0 + BN > lk || (p.causal && n0 + BN - 1 > m0 + wr);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int col = n0 + nt * 8 + 2 * t + (e & 1);
            const int row = m0 + wr + mt * 16 + g + (e < 2 ? 0 : 8);
            float x = s[mt][nt][e] * scale2;
            if (edge && (col >= lk || (p.causal && col > row))) {
              x = -CUDART_INF_F;
            } else if constexpr (kMask) {
              x += mask_value(p, mask_base[mt][e / 2] + col * p.mask_strides[3]) * kLog2e;
            }
            s[mt][nt][e] = x;
          }
        }
      }
      // Online softmax: per row, the running max, the rescale of what came before.
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float mx = row_max[mt][r];
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            mx = fmaxf(mx, fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));
          }
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float base = mx == -CUDART_INF_F ? 0.0f : mx;  // a row masked out so far: exp2(-inf) = 0
          const float corr = fast_exp2(row_max[mt][r] - base);
          row_max[mt][r] = mx;
          float sum = 0.0f;
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            s[mt][nt][2 * r] = fast_exp2(s[mt][nt][2 * r] - base);
            s[mt][nt][2 * r + 1] = fast_exp2(s[mt][nt][2 * r + 1] - base);
            sum += s[mt][nt][2 * r] + s[mt][nt][2 * r + 1];
          }
          row_sum[mt][r] = row_sum[mt][r] * corr + sum;  // this thread's part; the quad sums at the end
#pragma unroll
          for (int dt = 0; dt < kDT; ++dt) {
            o[mt][dt][2 * r] *= corr;
            o[mt][dt][2 * r + 1] *= corr;
          }
        }
      }
    }

    cp_async_wait<1>();  // this value tile (the next key tile may still be on its way)
    __syncthreads();
    if (!idle) {
      if constexpr (kF32) {
        // k-slot t holds key 2t of the group of 8, slot t + 4 key 2t + 1: the score fragment
        // (columns 2t, 2t + 1) is then the A fragment as it is.
#pragma unroll
        for (int kk = 0; kk < kNT; ++kk) {
          uint32_t ahi[MT][4], alo[MT][4];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            split_tf32(s[mt][kk][0], ahi[mt][0], alo[mt][0]);
            split_tf32(s[mt][kk][2], ahi[mt][1], alo[mt][1]);
            split_tf32(s[mt][kk][1], ahi[mt][2], alo[mt][2]);
            split_tf32(s[mt][kk][3], ahi[mt][3], alo[mt][3]);
          }
          const float* vb = sV + (kk * 8 + 2 * t) * kStride + g;
#pragma unroll
          for (int dt = 0; dt < kDT; ++dt) {
            uint32_t bh0, bl0, bh1, bl1;
            split_tf32(vb[dt * 8], bh0, bl0);
            split_tf32(vb[kStride + dt * 8], bh1, bl1);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
              mma1688(o[mt][dt], alo[mt], bh0, bh1);
              mma1688(o[mt][dt], ahi[mt], bl0, bl1);
              mma1688(o[mt][dt], ahi[mt], bh0, bh1);
            }
          }
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          uint32_t a[MT][4];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            a[mt][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
            a[mt][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
            a[mt][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
            a[mt][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
          }
#pragma unroll
          for (int dt = 0; dt < kDT; dt += 2) {
            uint32_t vb[4];
            ldmatrix_x4_trans(vb, sV + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * kStride + dt * 8 +
                                      (lane / 16) * 8);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
              mma16816<T>(o[mt][dt], a[mt], vb[0], vb[1]);
              mma16816<T>(o[mt][dt + 1], a[mt], vb[2], vb[3]);
            }
          }
        }
      }
    }
    __syncthreads();  // every warp is done with this value tile
  }
  cp_async_wait<0>();

#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int row = m0 + wr + mt * 16 + g + 8 * r;
      if (row >= lq) {
        continue;
      }
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      T* orow = static_cast<T*>(p.out) + b * p.out_strides[0] + h * p.out_strides[1] + row * p.out_strides[2];
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        store2(orow + dt * 8 + 2 * t, o[mt][dt][2 * r] * inv, o[mt][dt][2 * r + 1] * inv);
      }
      if (p.lse != nullptr && t == 0) {
        p.lse[b * p.lse_strides[0] + h * p.lse_strides[1] + row * p.lse_strides[2]] =
            sum > 0.0f ? (row_max[mt][r] + log2f(sum)) * kLn2 : -CUDART_INF_F;
      }
    }
  }
#endif
}

template <typename T, int D, int MT, int BN, int kWarps, bool kMask>
int launch_kernel(const FusedPlan& p, cudaStream_t stream) {
  constexpr int kBlockM = 16 * MT * kWarps;
  constexpr size_t smem = static_cast<size_t>(kBlockM + 2 * BN) * (D + row_pad<T>()) * sizeof(T);
  static std::atomic<unsigned long long> opted_in{0};
  return launch_attention(fused_attention_kernel<T, D, MT, BN, kWarps, kMask>, p, kBlockM, kWarps * 32, smem,
                          opted_in, stream);
}

template <typename T, int D, int MT, int BN, int kWarps>
int launch(const FusedPlan& p, cudaStream_t stream) {
  return p.mask != nullptr ? launch_kernel<T, D, MT, BN, kWarps, true>(p, stream)
                           : launch_kernel<T, D, MT, BN, kWarps, false>(p, stream);
}

// The tile, by measurement (docs/gpu/attention_probe.py on an H100, causal; the table is in
// docs/gpu/attention.md): 16 query rows per warp, 4 warps, 64 keys per tile by default, and
// where at least 512 query rows give the grid enough CTAs and no mask is read:
// - head dim 128 from 1024 rows: 32 rows per warp (64 keys; 32 keys and 8 warps for float32),
//   which halves the key and value fragments read from shared memory per product;
// - head dim 64: 128 keys per tile (fewer rescales of the output per key).
// A mask keeps the default tile, whose registers have room for the mask's row offsets.
template <typename T, int D>
int launch_tile(const FusedPlan& p, cudaStream_t stream) {
  constexpr bool kF32 = std::is_same_v<T, float>;
  if (p.mask == nullptr && p.q_len >= 512) {
    if constexpr (D == 128) {
      if (p.q_len >= 1024) {
        if constexpr (kF32) {
          return launch_kernel<T, D, 2, 32, 8, false>(p, stream);
        } else {
          return launch_kernel<T, D, 2, 64, 4, false>(p, stream);
        }
      }
    } else if constexpr (D == 64) {
      return launch_kernel<T, D, 1, 128, 4, false>(p, stream);
    }
  }
  return launch<T, D, 1, 64, 4>(p, stream);
}

template <typename T>
int launch_dim(const FusedPlan& p, cudaStream_t stream) {
  switch (p.head_dim) {
    case 32:
      return launch_tile<T, 32>(p, stream);
    case 64:
      return launch_tile<T, 64>(p, stream);
    case 96:
      return launch_tile<T, 96>(p, stream);
    case 128:
      return launch_tile<T, 128>(p, stream);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// Strides of dims whose size exceeds 1 must be 16-byte multiples (the others never move).
bool strides_aligned(const int64_t (&strides)[3], const int64_t (&sizes)[3], size_t element) {
  for (int i = 0; i < 3; ++i) {
    if (sizes[i] > 1 && (strides[i] * static_cast<int64_t>(element)) % 16 != 0) {
      return false;
    }
  }
  return true;
}

// major * 10 + minor, asked of CUDA once per device; 0 where CUDA cannot say.
int compute_capability(int device) {
  static std::atomic<int> known[64] = {};
  if (device >= 0 && device < 64) {
    int cached = known[device].load(std::memory_order_relaxed);
    if (cached != 0) {
      return cached;
    }
  }
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (device >= 0 && device < 64) {
    known[device].store(major * 10 + minor, std::memory_order_relaxed);
  }
  return major * 10 + minor;
}

}  // namespace

bool fused_attention_takes(const FusedPlan& p, int device) {
  if (p.dtype != 6 && p.dtype != 5 && p.dtype != 15) {
    return false;
  }
  if (p.head_dim != 32 && p.head_dim != 64 && p.head_dim != 96 && p.head_dim != 128) {
    return false;
  }
  if (p.q_len < 1 || p.k_len < 1 || p.q_len > (1 << 30) || p.k_len > (1 << 30) || p.kv_heads < 1 ||
      p.heads % p.kv_heads != 0 || p.zero_count < 0 || p.zero_count > 4) {
    return false;
  }
  int64_t tiles = (p.q_len + 15) / 16;  // the most CTAs: one warp per CTA would be 16 rows
  if (p.batch * p.heads > (int64_t{1} << 40) || tiles * p.batch * p.heads > 2147483647LL) {
    return false;
  }
  size_t element = p.dtype == 6 ? 4 : 2;
  const int64_t q_sizes[3] = {p.batch, p.heads, p.q_len};
  const int64_t kv_sizes[3] = {p.batch, p.kv_heads, p.k_len};
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.out) ||
      !strides_aligned(p.q_strides, q_sizes, element) || !strides_aligned(p.k_strides, kv_sizes, element) ||
      !strides_aligned(p.v_strides, kv_sizes, element) || !strides_aligned(p.out_strides, q_sizes, element)) {
    return false;
  }
  return compute_capability(device) >= 80;
}

int fused_attention(const FusedPlan& p, int device, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int cc = compute_capability(device);
  if (p.hopper && hopper_attention_takes(p, cc / 10, cc % 10)) {
    int status = hopper_attention(p, device, stream);
    // No Hopper kernel with its body to launch (hopper_attention's check of the loaded
    // image): the mma.sync kernel takes the call instead.
    if (status != cudaErrorNoKernelImageForDevice && status != cudaErrorInvalidDeviceFunction) {
      return status;
    }
    (void)cudaGetLastError();
  }
  switch (p.dtype) {
    case 6:
      return launch_dim<float>(p, s);
    case 5:
      return launch_dim<__half>(p, s);
    case 15:
      return launch_dim<__nv_bfloat16>(p, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace aotishim::kernels
