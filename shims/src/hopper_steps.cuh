// One warpgroup's steps of the Hopper attention kernels (64 query rows; attention_hopper.cu):
// issuing the two products, the online softmax of a key tile, the output rows.
#pragma once

#include "hopper_device.cuh"

#include <math_constants.h>

namespace aotishim::kernels::device {

// One query tile of one batch and head: the `linear`-th in the heavy-first order (for causal,
// the late tiles have the most keys), and how many key tiles of block_n its rows see. (The
// mma.sync kernel in attention_fused.cu walks the same order by lines of its own.)
struct QueryTile {
  int64_t b, h;
  int m0;       // its first query row
  int n_tiles;  // key tiles up to the causal cut or the end
};

__device__ inline QueryTile query_tile(const FusedPlan& p, int64_t linear, int tiles, int64_t bh_count, int block_m,
                                       int block_n) {
  QueryTile q;
  const int tile = tiles - 1 - static_cast<int>(linear / bh_count);
  const int64_t bh = linear % bh_count;
  q.b = bh / p.heads;
  q.h = bh % p.heads;
  q.m0 = tile * block_m;
  const int lk = static_cast<int>(p.k_len);
  const int n_end = p.causal ? min(lk, q.m0 + block_m) : lk;
  q.n_tiles = (n_end + block_n - 1) / block_n;
  return q;
}

// Where a CTA's operands are: its query tile, the query tile's [b, h] base and the key/value
// [b, kv head] bases (bytes), and the row strides in bytes. One CTA per query tile.
struct Operands {
  QueryTile tile;
  const unsigned char* q;
  const unsigned char* k;
  const unsigned char* v;
  int64_t q_row, k_row, v_row;
};

template <typename T>
__device__ inline Operands operands(const FusedPlan& p, int block_m, int block_n, int tiles, int64_t bh_count) {
  Operands o;
  o.tile = query_tile(p, blockIdx.x, tiles, bh_count, block_m, block_n);
  const int64_t b = o.tile.b, h = o.tile.h, kvh = h / (p.heads / p.kv_heads);
  o.q_row = p.q_strides[2] * 2, o.k_row = p.k_strides[2] * 2, o.v_row = p.v_strides[2] * 2;
  o.q = reinterpret_cast<const unsigned char*>(static_cast<const T*>(p.q) + b * p.q_strides[0] +
                                               h * p.q_strides[1]) + o.tile.m0 * o.q_row;
  o.k = reinterpret_cast<const unsigned char*>(static_cast<const T*>(p.k) + b * p.k_strides[0] +
                                               kvh * p.k_strides[1]);
  o.v = reinterpret_cast<const unsigned char*>(static_cast<const T*>(p.v) + b * p.v_strides[0] +
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
// row_a + 8): the keys past the end and the causal cut, the running max and sum in base-2
// units of the scaled scores; s becomes the unnormalised probabilities and corr what the
// output so far is to be multiplied by. The scale is folded into the exponent's FMA: a max of
// the raw scores is the scaled one's (hopper_attention_takes asks for a positive scale).
template <int BN>
__device__ inline void softmax_step(float (&s)[BN / 2], const FusedPlan& p, int n0, int first_row, int row_a, int t,
                                    float scale2, float (&row_max)[2], float (&row_sum)[2], float (&corr)[2]) {
  constexpr int kS = BN / 2;
  const int lk = static_cast<int>(p.k_len);
  if (n0 + BN > lk || (p.causal && n0 + BN - 1 > first_row)) {
#pragma unroll
    for (int i = 0; i < kS; ++i) {
      const int col = n0 + (i / 4) * 8 + 2 * t + (i & 1);
      const int row = row_a + ((i & 2) ? 8 : 0);
      if (col >= lk || (p.causal && col > row)) {
        s[i] = -CUDART_INF_F;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -CUDART_INF_F;
#pragma unroll
    for (int i = 0; i < kS / 4; ++i) {
      mx = fmaxf(mx, fmaxf(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]));
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    mx = fmaxf(row_max[r], mx * scale2);
    const float base = mx == -CUDART_INF_F ? 0.0f : mx;  // a row masked out so far: exp2(-inf) = 0
    corr[r] = fast_exp2(row_max[r] - base);
    row_max[r] = mx;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kS / 4; ++i) {
      s[4 * i + 2 * r] = fast_exp2(fmaf(s[4 * i + 2 * r], scale2, -base));
      s[4 * i + 2 * r + 1] = fast_exp2(fmaf(s[4 * i + 2 * r + 1], scale2, -base));
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
__device__ inline void write_rows(const FusedPlan& p, const QueryTile& at, const float (&o)[D / 2], int row_a, int t,
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

}  // namespace aotishim::kernels::device
