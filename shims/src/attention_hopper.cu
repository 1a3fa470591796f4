// The Hopper attention forward kernels (issue 38), for compute capability 9.0 only (built for
// sm_90a: wgmma is an sm_90a instruction). The algorithm of attention_fused.cu (online softmax
// over key tiles, scores never leave the chip, causal tiles past the diagonal never loaded)
// with Hopper's warpgroup MMA instead of mma.sync: S = Q K^T reads both operands from shared
// memory by descriptor, P V takes P from registers, in the 128-byte swizzle (hopper_steps.cuh).
// - The warp-specialised kernel (the one calls take): a producer warpgroup loads tiles by TMA
//   into a ring of stages under mbarriers; two consumer warpgroups take turns on the tensor
//   cores (FlashAttention-3's ping-pong); persistent, one CTA per SM.
// - The pipelined kernel: its own threads load tiles by cp.async, three stages; the fallback
//   where no tensor map can describe the operands, and the probe's reference.
// The probabilities are rounded to the inputs' dtype for P V, as in the mma.sync kernel.
#include "attention_hopper.h"

#include "hopper_steps.cuh"

#include <cuda.h>  // CUtensorMap and its enums; the encoder comes through cudart's entry point
#include <math_constants.h>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace aotishim::kernels {
namespace {

using namespace device;

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
  const Operands at = operands<T>(p, kBlockM, kBlockN, tiles, bh_count);
  const int lq = static_cast<int>(p.q_len), lk = static_cast<int>(p.k_len);
  const int m0 = at.tile.m0, n_tiles = at.tile.n_tiles;
  auto load = [&](int tile) {
    const int n0 = tile * kBlockN;
    load_swizzled<D, kBlockN, kThreads>(stage(tile), at.k + n0 * at.k_row, at.k_row, lk - n0, tid);
    load_swizzled<D, kBlockN, kThreads>(stage(tile) + kKVBytes, at.v + n0 * at.v_row, at.v_row, lk - n0, tid);
  };

  load_swizzled<D, kBlockM, kThreads>(sQ, at.q, at.q_row, lq - m0, tid);
  load(0);
  cp_async_commit();
  if (n_tiles > 1) {
    load(1);
  }
  cp_async_commit();

  const int first_row = m0 + group * 64;               // this warpgroup's first row
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
  write_rows<T, D>(p, at.tile, o, row_a, t, row_max, row_sum);
#endif
}

// ---- the warp-specialised kernel: TMA loads, mbarriers, two warpgroups in ping-pong ----

// The shared memory of the warp-specialised kernel: the query tile, kStages key and value
// tiles, then the barriers (dynamic shared memory only: a static part would move the 1024-byte
// alignment the swizzle needs).
template <int D, int kBlockN, int kStages>
struct SpecialisedLayout {
  static constexpr int kBlockM = 128;
  static constexpr size_t kQBytes = kBlockM * D * 2, kTileBytes = kBlockN * D * 2;
  static constexpr size_t kBarriers = 2 + 4 * kStages;  // query full and free; key/value full and free per stage
  static constexpr size_t kBytes = kQBytes + 2 * kStages * kTileBytes + kBarriers * 8;
};

// Work item `k` of this CTA, false past the last: CTA c takes items c, 2G - 1 - c, 2G + c,
// 4G - 1 - c, ... of the heavy-first order (G CTAs), so that the CTA with the heaviest item of
// one round has the lightest of the next.
__device__ inline bool work_item(const FusedPlan& p, int k, int tiles, int64_t bh_count, int block_m, int block_n,
                                 QueryTile& w) {
  const int64_t g = gridDim.x;
  const int64_t linear = static_cast<int64_t>(k) * g + (k % 2 == 0 ? blockIdx.x : g - 1 - blockIdx.x);
  if (linear >= tiles * bh_count) {
    return false;
  }
  w = query_tile(p, linear, tiles, bh_count, block_m, block_n);
  return true;
}

// Two consumer warpgroups of 64 query rows and a producer warpgroup, persistent: one CTA per
// SM takes work items (a query tile of one batch and head) until none is left. The producer's
// one thread loads each item's query tile once the consumers' last S of the item before has
// read the old one, and the key and value tiles kStages deep by TMA (the swizzle and the zero
// rows past the end done by the copy engine), each tile's arrival on a barrier of its own;
// consumers free a stage's keys when S has read them and its values when P V has. So the
// next item's first tiles load while this one's last products and output run. The consumers
// take turns issuing their products (FlashAttention-3's ping-pong): one warpgroup's softmax
// runs while the other's products hold the tensor cores, and within a warpgroup S(j) and
// P(j-1) V(j-1) overlap the softmax as in the pipelined kernel.
template <typename T, int D, int kBlockN, int kStages>
__global__ void __launch_bounds__(384, 1)
    hopper_specialised_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                              const __grid_constant__ CUtensorMap v_map, const FusedPlan p, int tiles,
                              int64_t bh_count) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = SpecialisedLayout<D, kBlockN, kStages>;
  constexpr int kBlockM = L::kBlockM;
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sQ = smem;
  unsigned char* sK = sQ + L::kQBytes;
  unsigned char* sV = sK + kStages * L::kTileBytes;
  uint64_t* q_full = reinterpret_cast<uint64_t*>(sV + kStages * L::kTileBytes);
  uint64_t* q_free = q_full + 1;
  uint64_t* k_full = q_free + 1;
  uint64_t* v_full = k_full + kStages;
  uint64_t* k_free = v_full + kStages;
  uint64_t* v_free = k_free + kStages;

  const int tid = threadIdx.x;
  if (tid == 0) {
    barrier_init(q_full, 1);
    barrier_init(q_free, 8);  // one arrival per consumer warp
#pragma unroll
    for (int i = 0; i < kStages; ++i) {
      barrier_init(k_full + i, 1);
      barrier_init(v_full + i, 1);
      barrier_init(k_free + i, 8);
      barrier_init(v_free + i, 8);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (blockIdx.x == 0 && tid < p.zero_count) {
    p.zeros[tid] = 0;
  }
  __syncthreads();

  QueryTile w;
  if (tid >= 256) {  // the producer warpgroup: one thread issues, the rest give their registers up
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (tid == 256) {
      // Key/value tiles so far, over every item: the stage and its use. 64-bit: a CTA of a long
      // call can load over 2^31 tiles.
      int64_t loaded = 0;
      for (int k = 0; work_item(p, k, tiles, bh_count, kBlockM, kBlockN, w); ++k) {
        const int kvh = static_cast<int>(w.h / (p.heads / p.kv_heads));
        if (k > 0) {
          barrier_wait(q_free, (k - 1) & 1);
        }
        barrier_expect(q_full, static_cast<uint32_t>(L::kQBytes));
#pragma unroll
        for (int c = 0; c < D / 64; ++c) {
          tma_load(sQ + c * kBlockM * 128, &q_map, q_full, c * 64, w.m0, static_cast<int>(w.h),
                   static_cast<int>(w.b));
        }
        for (int j = 0; j < w.n_tiles; ++j, ++loaded) {
          const int stage = static_cast<int>(loaded % kStages);
          const int64_t use = loaded / kStages;
          // Keys, then values: each into its stage once the consumers freed its last use.
          auto load = [&](uint64_t* free, uint64_t* full, unsigned char* tiles_of, const CUtensorMap* map) {
            if (use > 0) {
              barrier_wait(free + stage, (use - 1) & 1);
            }
            barrier_expect(full + stage, static_cast<uint32_t>(L::kTileBytes));
#pragma unroll
            for (int c = 0; c < D / 64; ++c) {
              tma_load(tiles_of + stage * L::kTileBytes + c * kBlockN * 128, map, full + stage, c * 64, j * kBlockN,
                       kvh, static_cast<int>(w.b));
            }
          };
          load(k_free, k_full, sK, &k_map);
          load(v_free, v_full, sV, &v_map);
        }
      }
    }
    return;
  }
  // The consumers take the registers the producer gave up (24 + 2 x 240 per thread in 64 Ki).
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");

  const int group = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, t = lane % 4;
  const unsigned char* q_rows = sQ + group * 64 * 128;
  const float scale2 = p.scale * kLog2e;
  auto release = [&](uint64_t* bar) {
    if (lane == 0) {
      barrier_arrive(bar);
    }
  };
  auto slot = [](int64_t g) { return static_cast<int>(g % kStages); };
  auto keys = [&](int64_t g) { return sK + slot(g) * L::kTileBytes; };
  auto values = [&](int64_t g) { return sV + slot(g) * L::kTileBytes; };
  auto parity = [](int64_t g) { return static_cast<uint32_t>((g / kStages) & 1); };

  if (group == 1) {
    turn_pass(group);  // warpgroup 0 issues first
  }
  float o[D / 2];
  float row_max[2], row_sum[2], corr[2];
  float s[kBlockN / 2];
  uint32_t pa[kBlockN / 16][4];
  int64_t done = 0;  // key/value tiles consumed so far, over every item (as `loaded`)
  for (int k = 0; work_item(p, k, tiles, bh_count, kBlockM, kBlockN, w); ++k) {
    const int first_row = w.m0 + group * 64;
    const int row_a = first_row + warp * 16 + lane / 4;
#pragma unroll
    for (int i = 0; i < D / 2; ++i) {
      o[i] = 0.0f;
    }
    row_max[0] = row_max[1] = -CUDART_INF_F;
    row_sum[0] = row_sum[1] = 0.0f;
    const int64_t last = done + w.n_tiles - 1;

    barrier_wait(q_full, k & 1);
    barrier_wait(k_full + slot(done), parity(done));
    turn_wait(group);
    issue_scores<T, D, kBlockN>(s, q_rows, kBlockM, keys(done));
    turn_pass(group);
    wgmma_wait_all();
    hold(s);
    release(k_free + slot(done));
    if (w.n_tiles == 1) {
      release(q_free);
    }
    softmax_step<kBlockN>(s, p, 0, first_row, row_a, t, scale2, row_max, row_sum, corr);
    to_fragments<T, kBlockN>(s, pa);

    for (int j = 1; j < w.n_tiles; ++j) {
      const int64_t g = done + j;
      barrier_wait(k_full + slot(g), parity(g));
      barrier_wait(v_full + slot(g - 1), parity(g - 1));
      turn_wait(group);
      issue_scores<T, D, kBlockN>(s, q_rows, kBlockM, keys(g));
      rescale<D>(o, corr);  // by tile j - 1's softmax, while S(j) runs
      issue_values<T, D, kBlockN>(o, pa, values(g - 1));
      turn_pass(group);
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // S(j) is in
      hold(s);
      release(k_free + slot(g));
      if (g == last) {
        release(q_free);  // the item's last S has read the query tile
      }
      softmax_step<kBlockN>(s, p, j * kBlockN, first_row, row_a, t, scale2, row_max, row_sum, corr);
      wgmma_wait_all();  // O += P(j-1) V(j-1) is in: its fragments are free again
      hold(o);
      hold(pa);
      release(v_free + slot(g - 1));
      to_fragments<T, kBlockN>(s, pa);
    }
    barrier_wait(v_full + slot(last), parity(last));
    turn_wait(group);
    rescale<D>(o, corr);
    issue_values<T, D, kBlockN>(o, pa, values(last));
    turn_pass(group);
    wgmma_wait_all();
    hold(o);
    hold(pa);
    release(v_free + slot(last));
    done = last + 1;
    write_rows<T, D>(p, w, o, row_a, t, row_max, row_sum);
  }
  if (group == 0) {
    turn_wait(0);  // warpgroup 1's last pass: every arrival at a turn barrier is taken
  }
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

// cuTensorMapEncodeTiled, the driver's, through cudart's entry point (the shims link no
// driver library); null where this driver has none.
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiled encode_tiled() {
  static const EncodeTiled encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<EncodeTiled>(nullptr);
    }
    return reinterpret_cast<EncodeTiled>(fn);
  }();
  return encode;
}

// A tensor map of one operand, [batch, heads, len, dim] with `strides` in elements over the
// first three, boxes of 64 columns by `rows` rows in the 128-byte swizzle. False where the
// driver refuses it (a stride TMA cannot step, say): the caller takes another kernel.
bool tile_map(CUtensorMap* map, const void* base, int32_t dtype, int64_t batch, int64_t heads, int64_t len,
              int64_t dim, const int64_t (&strides)[3], int rows) {
  EncodeTiled encode = encode_tiled();
  if (encode == nullptr) {
    return false;
  }
  const cuuint64_t sizes[4] = {static_cast<cuuint64_t>(dim), static_cast<cuuint64_t>(len),
                               static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  cuuint64_t steps[3] = {static_cast<cuuint64_t>(strides[2]) * 2, static_cast<cuuint64_t>(strides[1]) * 2,
                         static_cast<cuuint64_t>(strides[0]) * 2};
  // A dimension of one is never stepped over, and torch leaves its stride free (any value
  // describes the tensor): give it one TMA takes, a multiple of 16 bytes.
  for (int i = 0; i < 3; ++i) {
    if (sizes[i + 1] == 1) {
      steps[i] = static_cast<cuuint64_t>(dim) * 2;
    }
  }
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(rows), 1, 1};
  const cuuint32_t unit[4] = {1, 1, 1, 1};
  return encode(map, dtype == 15 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                const_cast<void*>(base), sizes, steps, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The device's SM count, asked of CUDA once per device (the persistent kernel's grid).
int multiprocessors(int device, int& count) {
  static std::atomic<int> known[64] = {};
  if (device >= 0 && device < 64 && (count = known[device].load(std::memory_order_relaxed)) > 0) {
    return 0;
  }
  const cudaError_t e = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) {
    return static_cast<int>(e);
  }
  if (device >= 0 && device < 64) {
    known[device].store(count, std::memory_order_relaxed);
  }
  return 0;
}

template <typename T, int D, int kBlockN, int kStages>
int launch_specialised(const FusedPlan& given, int device, cudaStream_t stream) {
  using L = SpecialisedLayout<D, kBlockN, kStages>;
  FusedPlan p = given;
  if (p.kv_heads > 1 && p.k_strides[1] == 0 && p.v_strides[1] == 0) {
    p.kv_heads = 1;  // key and value heads broadcast by a zero stride (expand) are one head
  }
  auto kernel = hopper_specialised_kernel<T, D, kBlockN, kStages>;
  static std::atomic<int> body{0};
  if (!has_body(reinterpret_cast<const void*>(kernel), body)) {
    return static_cast<int>(cudaErrorNoKernelImageForDevice);
  }
  CUtensorMap maps[3];
  if (!tile_map(&maps[0], p.q, p.dtype, p.batch, p.heads, p.q_len, D, p.q_strides, L::kBlockM) ||
      !tile_map(&maps[1], p.k, p.dtype, p.batch, p.kv_heads, p.k_len, D, p.k_strides, kBlockN) ||
      !tile_map(&maps[2], p.v, p.dtype, p.batch, p.kv_heads, p.k_len, D, p.v_strides, kBlockN)) {
    return static_cast<int>(cudaErrorNoKernelImageForDevice);  // the pipelined kernel takes the call
  }
  static std::atomic<unsigned long long> opted_in{0};
  int status = opt_in_shared_memory(reinterpret_cast<const void*>(kernel), L::kBytes, opted_in);
  if (status != 0) {
    return status;
  }
  const int tiles = static_cast<int>((p.q_len + L::kBlockM - 1) / L::kBlockM);
  const int64_t bh = p.batch * p.heads;
  int sms = 0;
  status = multiprocessors(device, sms);
  if (status != 0) {
    return status;
  }
  const int64_t ctas = std::min<int64_t>(tiles * bh, sms);  // one per SM (its shared memory allows no second)
  kernel<<<static_cast<unsigned>(ctas), 384, L::kBytes, stream>>>(maps[0], maps[1], maps[2], p, tiles, bh);
  return static_cast<int>(cudaGetLastError());
}

// The tile each head dim takes (hopper_attention_takes says where).
template <typename T>
int launch_for(const FusedPlan& p, int device, cudaStream_t stream) {
  if (p.tensor_maps) {
    const int status = p.head_dim == 64 ? launch_specialised<T, 64, 128, 2>(p, device, stream)
                                        : launch_specialised<T, 128, 128, 2>(p, device, stream);
    if (status != cudaErrorNoKernelImageForDevice) {
      return status;
    }
  }
  // No tensor map for these operands, or no kernel body: the pipelined kernel needs neither TMA
  // nor a producer.
  return p.head_dim == 64 ? launch_pipelined<T, 64, 1, 64>(p, stream) : launch_pipelined<T, 128, 2, 128>(p, stream);
}

}  // namespace

// Where it is faster than the mma.sync kernel, by the probe of run27 on an H100 (the table
// in docs/gpu/attention.md), without a mask, from 256 query rows at head dims 64 and 128: the
// warp-specialised kernel, 128 keys per tile, two stages, took 0.0133 against 0.0219 ms at
// (4, 16, 512, 64) causal, 0.0740 against 0.166 at (1, 32, 2048, 128) and 0.0169 against
// 0.0221 at (8, 16, 256, 128). Shorter calls stay on the mma.sync kernel, whose 16-row warps
// waste less of a short query than a 128-row CTA does.
bool hopper_attention_takes(const FusedPlan& p, int major, int minor) {
  if (major != 9 || minor != 0 || (p.dtype != 5 && p.dtype != 15) || p.mask != nullptr) {
    return false;
  }
  // The softmax folds the scale into its exponent (hopper_steps.cuh): positive, and finite in
  // base-2 units.
  if (!(p.scale > 0.0f) || !std::isfinite(p.scale * kLog2e)) {
    return false;
  }
  return (p.head_dim == 64 || p.head_dim == 128) && p.q_len >= 256;
}

int hopper_attention(const FusedPlan& p, int device, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  return p.dtype == 15 ? launch_for<__nv_bfloat16>(p, device, s) : launch_for<__half>(p, device, s);
}

}  // namespace aotishim::kernels
