// Each element type's arithmetic type, for the kernels that sum in it: float for the 16-bit
// types (and float), double for double. to_acc widens, from_acc rounds back to nearest.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace aotishim::kernels {

template <typename T>
struct Arith {
  using type = float;
};
template <>
struct Arith<double> {
  using type = double;
};

__device__ inline float to_acc(float v) { return v; }
__device__ inline double to_acc(double v) { return v; }
__device__ inline float to_acc(__half v) { return __half2float(v); }
__device__ inline float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ inline T from_acc(typename Arith<T>::type v) {
  return v;  // float and double: already the type
}
template <>
__device__ inline __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ inline __nv_bfloat16 from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

}  // namespace aotishim::kernels
