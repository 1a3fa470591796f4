// The Hopper attention forward kernel (issue 38), for compute capability 9.0 only (built for
// sm_90a: wgmma is an sm_90a instruction). The algorithm of attention_fused.cu (online softmax
// over key tiles, scores never leave the chip, causal tiles past the diagonal never loaded)
// with Hopper's warpgroup MMA instead of mma.sync:
// - a CTA is one or two warpgroups of 64 query rows; key and value tiles, shared by them, are
//   staged three deep by cp.async, in the 128-byte swizzle wgmma's shared-memory descriptors
//   name;
// - S = Q K^T reads both operands from shared memory by descriptor (no fragment loads into
//   registers, which bound the mma.sync kernel), P V takes P from registers;
// - the products overlap the softmax (FlashAttention-3's intra-warpgroup pipelining).
// The probabilities are rounded to the inputs' dtype for P V, as in the mma.sync kernel.
#include "attention_hopper.h"

#include "attention_device.cuh"

#include <math_constants.h>

#include <atomic>

namespace aotishim::kernels {
namespace {

using namespace device;


// ---- wgmma (PTX ISA 8.0, sm_90a), float32 accumulators in the mma.sync C layout per warp ----
// wgmma_ss: d (+)= A B with A (64 x 16) and B (16 x N) both K-major in shared memory;
// wgmma_rs: d (+)= A B with A from registers (the mma.sync m16n8k16 A layout per warp) and B
// (16 x N) N-major in shared memory. scale_d = 0 ignores d's old values.
// The accumulators as asm operands, 8 at a time, and their names in the instruction.
#define AOTISHIM_D8(i)                                                                                   \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define AOTISHIM_D32 AOTISHIM_D8(0), AOTISHIM_D8(8), AOTISHIM_D8(16), AOTISHIM_D8(24)
#define AOTISHIM_D64 AOTISHIM_D32, AOTISHIM_D8(32), AOTISHIM_D8(40), AOTISHIM_D8(48), AOTISHIM_D8(56)
#define AOTISHIM_R32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define AOTISHIM_R64 \
  AOTISHIM_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
// d (+)= A B, m64nNk16, TY bf16 or f16; N/2 accumulators, then the operands numbered from N/2.
// SS: a and b descriptors, scale_d (0: d's old values ignored).
#define AOTISHIM_WGMMA_SS(N, TY, REGS, DLIST, A, B, S)                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" REGS "}, %" #A ", %" #B \
               ", p, 1, 1, 0, 0;\n}\n"                                                                      \
               : DLIST                                                                                    \
               : "l"(a), "l"(b), "r"(scale_d))
// RS: four A-fragment registers, the b descriptor (N-major: imm-trans-b 1), scale_d.
#define AOTISHIM_WGMMA_RS(N, TY, REGS, DLIST, A0, A1, A2, A3, B, S)                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {" REGS "}, {%" #A0 ", %" #A1 \
               ", %" #A2 ", %" #A3 "}, %" #B ", p, 1, 1, 1;\n}\n"                                            \
               : DLIST                                                                                    \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d))

template <typename T>
__device__ inline void wgmma_ss(float (&d)[32], uint64_t a, uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_SS(64, "bf16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34);
  } else {
    AOTISHIM_WGMMA_SS(64, "f16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34);
  }
}
template <typename T>
__device__ inline void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_SS(128, "bf16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66);
  } else {
    AOTISHIM_WGMMA_SS(128, "f16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66);
  }
}
template <typename T>
__device__ inline void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_RS(64, "bf16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34, 35, 36, 37);
  } else {
    AOTISHIM_WGMMA_RS(64, "f16", AOTISHIM_R32, AOTISHIM_D32, 32, 33, 34, 35, 36, 37);
  }
}
template <typename T>
__device__ inline void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    AOTISHIM_WGMMA_RS(128, "bf16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66, 67, 68, 69);
  } else {
    AOTISHIM_WGMMA_RS(128, "f16", AOTISHIM_R64, AOTISHIM_D64, 64, 65, 66, 67, 68, 69);
  }
}

__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// cp.async's writes reach the async proxy wgmma reads shared memory through.
__device__ inline void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Pins registers in place around an asynchronous wgmma: no read or write of them moves across.
template <int N>
__device__ inline void hold(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    asm volatile("" : "+f"(r[i])::"memory");
  }
}
// The same for A fragments a wgmma still reads: live, untouched, until this point.
template <int N>
__device__ inline void hold(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    asm volatile("" : "+r"(r[i][0]), "+r"(r[i][1]), "+r"(r[i][2]), "+r"(r[i][3])::"memory");
  }
}

// A [rows][D] tile of 2-byte elements as D/64 column blocks of rows x 128 bytes, the 16-byte
// chunk c of row r at chunk position (c % 8) ^ (r % 8): the 128-byte swizzle (blocks 1024-byte
// aligned). It also keeps cp.async's stores and wgmma's reads free of bank conflicts.
__device__ inline uint32_t swizzled(int r, int c, int rows) {
  return static_cast<uint32_t>((c / 8) * rows * 128 + r * 128 + (((c % 8) ^ (r % 8)) << 4));
}

// Rows at or past `valid` are zero-filled (a zero value row times a zero probability: no NaN).
template <int D, int Rows, int Threads>
__device__ inline void load_swizzled(unsigned char* smem, const unsigned char* gmem, int64_t row_bytes, int valid,
                                     int tid) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = tid; i < Rows * kChunks; i += Threads) {
    const int r = i / kChunks, c = i % kChunks;
    const bool ok = r < valid;
    cp_async16(smem + swizzled(r, c, Rows), ok ? gmem + r * row_bytes + c * 16 : gmem, ok ? 16 : 0);
  }
}

// A shared-memory matrix descriptor with the 128-byte swizzle: start address, leading and
// stride byte offsets (each in 16-byte units), the layout type in bits 62-63.
__device__ inline uint64_t descriptor(const void* smem, uint32_t leading, uint32_t stride) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return static_cast<uint64_t>((a & 0x3FFFF) >> 4) | (static_cast<uint64_t>((leading >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((stride >> 4) & 0x3FFF) << 32) | (uint64_t{1} << 62);
}

// ---- one warpgroup's steps (64 query rows): the products, the online softmax, the output ----

// Where a CTA's operands are: the query tile's [b, h] base and the key/value [b, kv head] bases
// (bytes), the row strides in bytes, and which (b, h, query tile) the CTA is.
struct Operands {
  const unsigned char* q;
  const unsigned char* k;
  const unsigned char* v;
  int64_t q_row, k_row, v_row;
  int64_t b, h;
  int m0;  // the CTA's first query row
};

template <typename T>
__device__ inline Operands operands(const FusedPlan& p, int block_m, int tiles, int64_t bh_count) {
  Operands o;
  // Heavy (late, for causal) query tiles first, as in the mma.sync kernel.
  const int64_t linear = blockIdx.x;
  const int tile = tiles - 1 - static_cast<int>(linear / bh_count);
  const int64_t bh = linear % bh_count;
  o.b = bh / p.heads;
  o.h = bh % p.heads;
  const int64_t kvh = o.h / (p.heads / p.kv_heads);
  o.m0 = tile * block_m;
  o.q_row = p.q_strides[2] * 2, o.k_row = p.k_strides[2] * 2, o.v_row = p.v_strides[2] * 2;
  o.q = reinterpret_cast<const unsigned char*>(static_cast<const T*>(p.q) + o.b * p.q_strides[0] +
                                               o.h * p.q_strides[1]) + o.m0 * o.q_row;
  o.k = reinterpret_cast<const unsigned char*>(static_cast<const T*>(p.k) + o.b * p.k_strides[0] +
                                               kvh * p.k_strides[1]);
  o.v = reinterpret_cast<const unsigned char*>(static_cast<const T*>(p.v) + o.b * p.v_strides[0] +
                                               kvh * p.v_strides[1]);
  return o;
}

// Issues S = Q K^T for one warpgroup: its 64 query rows (at q_rows of a query tile of
// block_m rows) against a key tile of BN rows; committed, not waited for.
template <typename T, int D, int BN>
__device__ inline void issue_scores(float (&s)[BN / 2], const unsigned char* q_rows, int block_m,
                                    const unsigned char* keys) {
  hold(s);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t da = descriptor(q_rows + (kk / 4) * block_m * 128 + (kk % 4) * 32, 16, 1024);
    const uint64_t db = descriptor(keys + (kk / 4) * BN * 128 + (kk % 4) * 32, 16, 1024);
    wgmma_ss<T>(s, da, db, kk > 0 ? 1 : 0);
  }
  wgmma_commit();
}

// Issues O += P V for one warpgroup (P: the previous softmax's A fragments, V a value tile
// of BN rows, N-major: 64-column blocks BN * 128 bytes apart, 8-key groups 1024); committed.
template <typename T, int D, int BN>
__device__ inline void issue_values(float (&o)[D / 2], uint32_t (&pa)[BN / 16][4], const unsigned char* values) {
  hold(o);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    wgmma_rs<T>(o, pa[kk], descriptor(values + kk * 16 * 128, BN * 128, 1024), 1);
  }
  wgmma_commit();
}

// The online softmax of one key tile's scores (keys n0.., this thread's rows row_a and
// row_a + 8): scale (base 2), the keys past the end and the causal cut, the running max and
// sum; s becomes the unnormalised probabilities and corr what the output so far is to be
// multiplied by.
template <int BN>
__device__ inline void softmax_step(float (&s)[BN / 2], const FusedPlan& p, int n0, int first_row, int row_a, int t,
                                    float scale2, float (&row_max)[2], float (&row_sum)[2], float (&corr)[2]) {
  constexpr int kS = BN / 2;
  const int lk = static_cast<int>(p.k_len);
  const bool edge = n0 + BN > lk || (p.causal && n0 + BN - 1 > first_row);
#pragma unroll
  for (int i = 0; i < kS; ++i) {
    const int col = n0 + (i / 4) * 8 + 2 * t + (i & 1);
    const int row = row_a + ((i & 2) ? 8 : 0);
    float x = s[i] * scale2;
    if (edge && (col >= lk || (p.causal && col > row))) {
      x = -CUDART_INF_F;
    }
    s[i] = x;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = row_max[r];
#pragma unroll
    for (int i = 0; i < kS / 4; ++i) {
      mx = fmaxf(mx, fmaxf(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]));
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float base = mx == -CUDART_INF_F ? 0.0f : mx;  // a row masked out so far: exp2(-inf) = 0
    corr[r] = fast_exp2(row_max[r] - base);
    row_max[r] = mx;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kS / 4; ++i) {
      s[4 * i + 2 * r] = fast_exp2(s[4 * i + 2 * r] - base);
      s[4 * i + 2 * r + 1] = fast_exp2(s[4 * i + 2 * r + 1] - base);
      sum += s[4 * i + 2 * r] + s[4 * i + 2 * r + 1];
    }
    row_sum[r] = row_sum[r] * corr[r] + sum;  // this thread's part; the quad sums at the end
  }
}

template <int D>
__device__ inline void rescale(float (&o)[D / 2], const float (&corr)[2]) {
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    o[4 * i] *= corr[0];
    o[4 * i + 1] *= corr[0];
    o[4 * i + 2] *= corr[1];
    o[4 * i + 3] *= corr[1];
  }
}

// P as wgmma A fragments: keys 16kk..16kk+15 are the score columns of n-blocks 2kk, 2kk+1.
template <typename T, int BN>
__device__ inline void to_fragments(const float (&s)[BN / 2], uint32_t (&pa)[BN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    pa[kk][0] = pack2<T>(s[8 * kk], s[8 * kk + 1]);
    pa[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
    pa[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
    pa[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

// The output rows normalised, and their logsumexp (natural log) where the call wants it.
template <typename T, int D>
__device__ inline void write_rows(const FusedPlan& p, const Operands& at, const float (&o)[D / 2], int row_a, int t,
                                  const float (&row_max)[2], const float (&row_sum)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = row_sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = row_a + 8 * r;
    if (row >= p.q_len) {
      continue;
    }
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    T* orow = static_cast<T*>(p.out) + at.b * p.out_strides[0] + at.h * p.out_strides[1] + row * p.out_strides[2];
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      store2(orow + 8 * i + 2 * t, o[4 * i + 2 * r] * inv, o[4 * i + 2 * r + 1] * inv);
    }
    if (p.lse != nullptr && t == 0) {
      p.lse[at.b * p.lse_strides[0] + at.h * p.lse_strides[1] + row * p.lse_strides[2]] =
          sum > 0.0f ? (row_max[r] + log2f(sum)) * kLn2 : -CUDART_INF_F;
    }
  }
}

// ---- the kernels ----

// kGroups warpgroups of 64 query rows per CTA, three stages of key and value tiles shared by
// them, and the products overlapped with the softmax (FlashAttention-3's intra-warpgroup
// pipelining): while the tensor cores run S(j) = Q K(j)^T and then O += P(j-1) V(j-1), a
// warpgroup waits for S(j) alone and computes its softmax; only the rescale of O waits for
// the second product. (Causal: a warpgroup whose rows all precede a tile still computes it,
// every score cut; the mma.sync kernel skips such work.)
template <typename T, int D, int kGroups, int kBlockN>
__global__ void __launch_bounds__(128 * kGroups) hopper_pipelined_kernel(const FusedPlan p, int tiles,
                                                                       int64_t bh_count) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kThreads = 128 * kGroups, kBlockM = 64 * kGroups, kStages = 3;
  constexpr int kKVBytes = kBlockN * D * 2;
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sQ = smem;
  // Stage i: its keys at stage(i), its values kKVBytes further.
  auto stage = [&](int tile) { return sQ + kBlockM * D * 2 + (tile % kStages) * 2 * kKVBytes; };

  const int tid = threadIdx.x, group = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, t = lane % 4;
  if (blockIdx.x == 0 && tid < p.zero_count) {
    p.zeros[tid] = 0;
  }
  const Operands at = operands<T>(p, kBlockM, tiles, bh_count);
  const int lq = static_cast<int>(p.q_len), lk = static_cast<int>(p.k_len);
  const int n_end = p.causal ? min(lk, at.m0 + kBlockM) : lk;
  const int n_tiles = (n_end + kBlockN - 1) / kBlockN;
  auto load = [&](int tile) {
    const int n0 = tile * kBlockN;
    load_swizzled<D, kBlockN, kThreads>(stage(tile), at.k + n0 * at.k_row, at.k_row, lk - n0, tid);
    load_swizzled<D, kBlockN, kThreads>(stage(tile) + kKVBytes, at.v + n0 * at.v_row, at.v_row, lk - n0, tid);
  };

  load_swizzled<D, kBlockM, kThreads>(sQ, at.q, at.q_row, lq - at.m0, tid);
  load(0);
  cp_async_commit();
  if (n_tiles > 1) {
    load(1);
  }
  cp_async_commit();

  const int first_row = at.m0 + group * 64;            // this warpgroup's first row
  const int row_a = first_row + warp * 16 + lane / 4;  // this thread's rows: row_a and row_a + 8
  const unsigned char* q_rows = sQ + group * 64 * 128;
  const float scale2 = p.scale * kLog2e;
  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) {
    o[i] = 0.0f;
  }
  float row_max[2] = {-CUDART_INF_F, -CUDART_INF_F}, row_sum[2] = {0.0f, 0.0f}, corr[2];
  float s[kBlockN / 2];
  uint32_t pa[kBlockN / 16][4];

  cp_async_wait<1>();
  fence_async_shared();
  __syncthreads();
  issue_scores<T, D, kBlockN>(s, q_rows, kBlockM, stage(0));
  wgmma_wait_all();
  hold(s);
  softmax_step<kBlockN>(s, p, 0, first_row, row_a, t, scale2, row_max, row_sum, corr);
  to_fragments<T, kBlockN>(s, pa);
  if (n_tiles > 2) {
    load(2);
  }
  cp_async_commit();

  for (int j = 1; j < n_tiles; ++j) {
    cp_async_wait<1>();  // tile j (tile j + 1 may still be on the way)
    fence_async_shared();
    __syncthreads();
    issue_scores<T, D, kBlockN>(s, q_rows, kBlockM, stage(j));
    issue_values<T, D, kBlockN>(o, pa, stage(j - 1) + kKVBytes);
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // S(j) is in
    hold(s);
    softmax_step<kBlockN>(s, p, j * kBlockN, first_row, row_a, t, scale2, row_max, row_sum, corr);
    wgmma_wait_all();  // O += P(j-1) V(j-1) is in: its fragments and O are free again
    hold(o);
    hold(pa);
    rescale<D>(o, corr);
    to_fragments<T, kBlockN>(s, pa);
    __syncthreads();  // every warp is done with tile j - 1's stage
    if (j + 2 < n_tiles) {
      load(j + 2);
    }
    cp_async_commit();  // possibly empty: the wait counts stay the same
  }
  issue_values<T, D, kBlockN>(o, pa, stage(n_tiles - 1) + kKVBytes);
  wgmma_wait_all();
  hold(o);
  cp_async_wait<0>();
  write_rows<T, D>(p, at, o, row_a, t, row_max, row_sum);
#endif
}

// Whether the image CUDA loads for this kernel has its body. The body exists only in sm_90a
// code; flags of the build's own (CMAKE_CUDA_FLAGS with -arch=sm_90, say) can add a plain
// sm_90 image beside it, whose empty kernel would launch, succeed and write nothing. Such an
// image uses a handful of registers, the real one over a hundred. Asked once per kernel.
bool has_body(const void* kernel, std::atomic<int>& known) {
  int state = known.load(std::memory_order_relaxed);
  if (state == 0) {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    state = attributes.numRegs >= 64 ? 1 : 2;
    known.store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

template <typename T, int D, int kGroups, int kBlockN>
int launch_pipelined(const FusedPlan& p, cudaStream_t stream) {
  constexpr int kBlockM = 64 * kGroups;
  constexpr size_t smem = static_cast<size_t>(kBlockM + 6 * kBlockN) * D * 2;
  auto kernel = hopper_pipelined_kernel<T, D, kGroups, kBlockN>;
  static std::atomic<int> body{0};
  if (!has_body(reinterpret_cast<const void*>(kernel), body)) {
    return static_cast<int>(cudaErrorNoKernelImageForDevice);  // the mma.sync kernel takes the call
  }
  static std::atomic<unsigned long long> opted_in{0};
  return launch_attention(kernel, p, kBlockM, 128 * kGroups, smem, opted_in, stream);
}

// The tile each head dim takes (hopper_attention_takes says where).
template <typename T>
int launch_for(const FusedPlan& p, cudaStream_t stream) {
  return p.head_dim == 64 ? launch_pipelined<T, 64, 1, 64>(p, stream) : launch_pipelined<T, 128, 2, 128>(p, stream);
}

}  // namespace

// Where it is faster than the mma.sync kernel, by the probes of run19 to run21 on an H100
// (the table in docs/gpu/attention.md), without a mask:
// - head dim 64 from 512 query rows: one warpgroup, 64 keys per tile (0.0181 against 0.0212
//   ms at (4, 16, 512, 64) causal, 0.0295 against 0.0370 at (2, 16, 1024, 64));
// - head dim 128 from 1024 query rows: two warpgroups, 128 keys per tile (0.137 against the
//   mma.sync kernel's 0.147 ms at (1, 32, 2048, 128) causal, 0.245 against 0.264 not causal).
// Shorter calls stay on the mma.sync kernel (at (8, 16, 256, 128) 0.0223 against 0.0219).
bool hopper_attention_takes(const FusedPlan& p, int major, int minor) {
  if (major != 9 || minor != 0 || (p.dtype != 5 && p.dtype != 15) || p.mask != nullptr) {
    return false;
  }
  return (p.head_dim == 64 && p.q_len >= 512) || (p.head_dim == 128 && p.q_len >= 1024);
}

int hopper_attention(const FusedPlan& p, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  return p.dtype == 15 ? launch_for<__nv_bfloat16>(p, s) : launch_for<__half>(p, s);
}

}  // namespace aotishim::kernels
