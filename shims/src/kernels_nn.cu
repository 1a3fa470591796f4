// Kernels of the CUDA convolution and attention fallbacks: the attention softmax between
// the two cuBLAS GEMMs, and the convolution's bias. Half types through cuda_fp16.h and
// cuda_bf16.h (in the nvidia-cuda-runtime wheel's headers).
#include "kernels_nn.h"

#include "element_arith.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math_constants.h>

namespace aotishim::kernels {
namespace {

constexpr int kRowThreads = 256;

__device__ inline float load(const void* p, int32_t dtype, int64_t i) {
  switch (dtype) {
    case 5:
      return __half2float(static_cast<const __half*>(p)[i]);
    case 15:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case 7:
      return static_cast<float>(static_cast<const double*>(p)[i]);
    case 11:
      return static_cast<const bool*>(p)[i] ? 0.0f : -CUDART_INF_F;
    default:
      return static_cast<const float*>(p)[i];
  }
}

__device__ inline void store(void* p, int32_t dtype, int64_t i, float v) {
  switch (dtype) {
    case 5:
      static_cast<__half*>(p)[i] = __float2half_rn(v);
      break;
    case 15:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
      break;
    default:
      static_cast<float*>(p)[i] = v;
  }
}

// Reduces one value per thread of the block; every thread gets the result.
template <bool kMax>
__device__ inline float block_reduce(float v, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    shared[warp] = v;
  }
  __syncthreads();
  int warps = blockDim.x / 32;
  v = lane < warps ? shared[lane] : (kMax ? -CUDART_INF_F : 0.0f);
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  __syncthreads();  // shared is reused by the next reduction
  return v;
}

// One block per row (b, h, l): max, sum of exponentials, then the probabilities. The row
// is read three times; at attention's sizes it stays in L2 between the passes.
__global__ void softmax_rows(SoftmaxPlan plan) {
  __shared__ float shared[32];
  int64_t row = blockIdx.x;
  int64_t l = row % plan.q_len;
  int64_t bh = row / plan.q_len;
  int64_t h = bh % plan.heads;
  int64_t b = bh / plan.heads;
  const float* in = plan.scores + row * plan.k_len;
  int64_t mask_base = b * plan.mask_strides[0] + h * plan.mask_strides[1] + l * plan.mask_strides[2];
  // causal: keys past the query's own position are out.
  int64_t end = plan.causal ? (l + 1 < plan.k_len ? l + 1 : plan.k_len) : plan.k_len;
  auto score = [&](int64_t s) {
    float v = in[s];
    if (plan.mask != nullptr) {
      v += load(plan.mask, plan.mask_dtype, mask_base + s * plan.mask_strides[3]);
    }
    return v;
  };
  float m = -CUDART_INF_F;
  for (int64_t s = threadIdx.x; s < end; s += blockDim.x) {
    m = fmaxf(m, score(s));
  }
  m = block_reduce<true>(m, shared);
  float total = 0.0f;
  if (m != -CUDART_INF_F) {
    for (int64_t s = threadIdx.x; s < end; s += blockDim.x) {
      total += __expf(score(s) - m);
    }
  }
  total = block_reduce<false>(total, shared);
  float inv = total > 0.0f ? 1.0f / total : 0.0f;
  int64_t out_base = row * plan.k_len;
  for (int64_t s = threadIdx.x; s < plan.k_len; s += blockDim.x) {
    float p = (s < end && m != -CUDART_INF_F) ? __expf(score(s) - m) * inv : 0.0f;
    store(plan.probs, plan.probs_dtype, out_base + s, p);
  }
  if (plan.lse != nullptr && threadIdx.x == 0) {
    plan.lse[b * plan.lse_strides[0] + h * plan.lse_strides[1] + l * plan.lse_strides[2]] =
        total > 0.0f ? m + logf(total) : -CUDART_INF_F;
  }
}

template <typename T>
__global__ void channel_bias(T* out, const T* bias, int64_t bias_stride, int64_t numel, int64_t channels, int64_t inner) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t c = (i / inner) % channels;
    out[i] = from_acc<T>(to_acc(out[i]) + to_acc(bias[c * bias_stride]));
  }
}

// Sums in Arith<T>: float, or float64 for double (the legacy path's float64 sums).
template <typename T>
__global__ void depthwise(DepthwisePlan p) {
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  T* out = static_cast<T*>(p.out);
  int64_t numel = p.out_sizes[0] * p.out_sizes[1] * p.out_sizes[2] * p.out_sizes[3];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t ow = i % p.out_sizes[3];
    int64_t rest = i / p.out_sizes[3];
    int64_t oh = rest % p.out_sizes[2];
    rest /= p.out_sizes[2];
    int64_t c = rest % p.out_sizes[1];
    int64_t n = rest / p.out_sizes[1];
    const T* xc = x + n * p.x_strides[0] + c * p.x_strides[1];
    const T* wc = w + c * p.w_strides[0];
    typename Arith<T>::type sum = 0;
    for (int64_t kh = 0; kh < p.kernel[0]; ++kh) {
      int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
      if (ih < 0 || ih >= p.x_sizes[2]) {
        continue;
      }
      for (int64_t kw = 0; kw < p.kernel[1]; ++kw) {
        int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
        if (iw < 0 || iw >= p.x_sizes[3]) {
          continue;
        }
        sum += to_acc(xc[ih * p.x_strides[2] + iw * p.x_strides[3]]) * to_acc(wc[kh * p.w_strides[2] + kw * p.w_strides[3]]);
      }
    }
    T* o = out + n * p.out_strides[0] + c * p.out_strides[1] + oh * p.out_strides[2] + ow * p.out_strides[3];
    *o = from_acc<T>(sum);
  }
}

}  // namespace

int attention_softmax(const SoftmaxPlan& plan, void* stream) {
  int64_t rows = plan.batch * plan.heads * plan.q_len;
  if (rows == 0) {
    return 0;
  }
  if (rows > 2147483647LL) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  softmax_rows<<<static_cast<unsigned>(rows), kRowThreads, 0, static_cast<cudaStream_t>(stream)>>>(plan);
  return static_cast<int>(cudaGetLastError());
}

int add_channel_bias(
    void* out, int32_t dtype, const void* bias, int64_t bias_stride, int64_t numel, int64_t channels, int64_t inner,
    void* stream) {
  if (numel == 0) {
    return 0;
  }
  int64_t blocks = (numel + 255) / 256;
  dim3 grid(static_cast<unsigned>(blocks < 4096 ? blocks : 4096));
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case 6:
      channel_bias<<<grid, 256, 0, s>>>(static_cast<float*>(out), static_cast<const float*>(bias), bias_stride, numel, channels, inner);
      break;
    case 7:
      channel_bias<<<grid, 256, 0, s>>>(static_cast<double*>(out), static_cast<const double*>(bias), bias_stride, numel, channels, inner);
      break;
    case 5:
      channel_bias<<<grid, 256, 0, s>>>(static_cast<__half*>(out), static_cast<const __half*>(bias), bias_stride, numel, channels, inner);
      break;
    case 15:
      channel_bias<<<grid, 256, 0, s>>>(
          static_cast<__nv_bfloat16*>(out), static_cast<const __nv_bfloat16*>(bias), bias_stride, numel, channels, inner);
      break;
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

int depthwise_conv2d(const DepthwisePlan& plan, void* stream) {
  int64_t numel = plan.out_sizes[0] * plan.out_sizes[1] * plan.out_sizes[2] * plan.out_sizes[3];
  if (numel == 0) {
    return 0;
  }
  int64_t blocks = (numel + 255) / 256;
  dim3 grid(static_cast<unsigned>(blocks < 4096 ? blocks : 4096));
  auto s = static_cast<cudaStream_t>(stream);
  switch (plan.dtype) {
    case 6:
      depthwise<float><<<grid, 256, 0, s>>>(plan);
      break;
    case 7:
      depthwise<double><<<grid, 256, 0, s>>>(plan);
      break;
    case 5:
      depthwise<__half><<<grid, 256, 0, s>>>(plan);
      break;
    case 15:
      depthwise<__nv_bfloat16><<<grid, 256, 0, s>>>(plan);
      break;
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace aotishim::kernels
