// The direct convolution of conv_direct.h.
//
// One block per output tile of kTileK channels by kTilePixels pixels (n, p, q flattened). Its
// warps share the input channels in chunks of 32, one channel per lane; each lane walks its
// channels' taps and keeps the tile's 32 partial sums in registers. The lanes' sums are
// folded by a reduce-scatter of shuffles (lane e ends with tile element e), the warps' sums
// added in warp order through shared memory. The order of every addition is fixed by the
// shapes alone: the same inputs give the same bits on every run.
#include "conv_direct.h"

#include "element_arith.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>

namespace aotishim::kernels {
namespace {

constexpr int kTileK = 4;
constexpr int kTilePixels = 8;
constexpr int kTile = kTileK * kTilePixels;  // one partial sum per lane after the fold
static_assert(kTile == 32, "the reduce-scatter leaves one tile element per lane");
constexpr int kMaxWarps = 8;

// Folds 2 * half sums per lane with the lane `bit` apart: each keeps the half its bit picks.
template <int kHalf, typename A>
__device__ inline void fold(A (&sums)[kTile], int lane, int bit) {
  const bool upper = (lane & bit) != 0;
#pragma unroll
  for (int i = 0; i < kHalf; ++i) {
    A keep = upper ? sums[i + kHalf] : sums[i];
    A send = upper ? sums[i] : sums[i + kHalf];
    sums[i] = keep + __shfl_xor_sync(0xffffffffu, send, bit);
  }
}

template <typename T>
__global__ void __launch_bounds__(32 * kMaxWarps) direct_conv(DirectConvPlan p, int pixel_tiles) {
  using A = typename Arith<T>::type;
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  const int k0 = static_cast<int>(blockIdx.x / pixel_tiles) * kTileK;
  const int j0 = static_cast<int>(blockIdx.x % pixel_tiles) * kTilePixels;
  const int plane = p.out_h * p.out_w;
  const int pixels = p.batch * plane;

  // Each pixel's input offset at its window's top-left tap, and that tap's row and column;
  // a pixel past the end gets a row no tap reaches (INT_MIN plus a tap's offset stays
  // negative, so it reads zeros; its sums are dropped).
  int base[kTilePixels], top[kTilePixels], left[kTilePixels];
#pragma unroll
  for (int u = 0; u < kTilePixels; ++u) {
    const int j = j0 + u;
    if (j < pixels) {
      const int n = j / plane, rest = j % plane;
      top[u] = (rest / p.out_w) * p.stride[0] - p.padding[0];
      left[u] = (rest % p.out_w) * p.stride[1] - p.padding[1];
      base[u] = n * p.x_strides[0];
    } else {
      top[u] = INT_MIN;
      left[u] = 0;
      base[u] = 0;
    }
  }
  int w_row[kTileK];
#pragma unroll
  for (int t = 0; t < kTileK; ++t) {
    w_row[t] = k0 + t < p.out_channels ? (k0 + t) * p.w_strides[0] : -1;
  }

  A sums[kTile];
#pragma unroll
  for (int i = 0; i < kTile; ++i) {
    sums[i] = A(0);
  }
  // Plain loads: __ldg's non-coherent path took 10 more registers and was no faster (one
  // H100, ResNet-18's channels-last calls: 181.0 us with it, run35, 175.9 without, run36).
  const int chunks = (p.in_channels + 31) / 32;
  for (int chunk = warp; chunk < chunks; chunk += warps) {
    const int c = chunk * 32 + lane;
    if (c >= p.in_channels) {
      continue;
    }
    const T* xc = x + c * p.x_strides[1];
    const T* wc = w + c * p.w_strides[1];
    for (int r = 0; r < p.kernel[0]; ++r) {
      const int dh = r * p.dilation[0];
      for (int s = 0; s < p.kernel[1]; ++s) {
        const int dw = s * p.dilation[1];
        const int tap = r * p.w_strides[2] + s * p.w_strides[3];
        A wv[kTileK];
#pragma unroll
        for (int t = 0; t < kTileK; ++t) {
          wv[t] = w_row[t] >= 0 ? to_acc(wc[w_row[t] + tap]) : A(0);
        }
#pragma unroll
        for (int u = 0; u < kTilePixels; ++u) {
          const int ih = top[u] + dh, iw = left[u] + dw;
          const bool inside = static_cast<unsigned>(ih) < static_cast<unsigned>(p.in_h) &&
                              static_cast<unsigned>(iw) < static_cast<unsigned>(p.in_w);
          const A xv = inside ? to_acc(xc[base[u] + ih * p.x_strides[2] + iw * p.x_strides[3]]) : A(0);
#pragma unroll
          for (int t = 0; t < kTileK; ++t) {
            sums[t * kTilePixels + u] = fma(wv[t], xv, sums[t * kTilePixels + u]);
          }
        }
      }
    }
  }

  // Reduce-scatter over the lanes: after the folds, lane e holds the warp's sum of element e
  // (each fold keeps, by one bit of the lane, the half its bit selects).
  fold<16>(sums, lane, 16);
  fold<8>(sums, lane, 8);
  fold<4>(sums, lane, 4);
  fold<2>(sums, lane, 2);
  fold<1>(sums, lane, 1);
  __shared__ A parts[kMaxWarps][kTile];
  parts[warp][lane] = sums[0];
  __syncthreads();
  if (warp != 0) {
    return;
  }
  A total = parts[0][lane];
  for (int v = 1; v < warps; ++v) {
    total += parts[v][lane];
  }
  const int t = lane / kTilePixels, u = lane % kTilePixels;
  const int k = k0 + t, j = j0 + u;
  if (k >= p.out_channels || j >= pixels) {
    return;
  }
  if (p.bias != nullptr) {
    total += to_acc(static_cast<const T*>(p.bias)[k * p.bias_stride]);
  }
  const int n = j / plane, rest = j % plane;
  const int offset = n * p.out_strides[0] + k * p.out_strides[1] + (rest / p.out_w) * p.out_strides[2] +
                     (rest % p.out_w) * p.out_strides[3];
  static_cast<T*>(p.out)[offset] = from_acc<T>(total);
}

template <typename T>
int launch(const DirectConvPlan& plan, cudaStream_t stream) {
  const long long pixels = static_cast<long long>(plan.batch) * plan.out_h * plan.out_w;
  const long long pixel_tiles = (pixels + kTilePixels - 1) / kTilePixels;
  const long long channel_tiles = (plan.out_channels + kTileK - 1) / kTileK;
  const long long blocks = pixel_tiles * channel_tiles;
  if (blocks == 0) {
    return 0;
  }
  if (blocks > 2147483647LL) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  const int chunks = (plan.in_channels + 31) / 32;
  const int warps = chunks < kMaxWarps ? chunks : kMaxWarps;
  direct_conv<T><<<static_cast<unsigned>(blocks), 32 * warps, 0, stream>>>(plan, static_cast<int>(pixel_tiles));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int direct_conv2d(const DirectConvPlan& plan, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (plan.dtype) {
    case 6:
      return launch<float>(plan, s);
    case 7:
      return launch<double>(plan, s);
    case 5:
      return launch<__half>(plan, s);
    case 15:
      return launch<__nv_bfloat16>(plan, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace aotishim::kernels
