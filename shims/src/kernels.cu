// Device kernels: strided copy (same dtype or converting) and fill, any layout up to
// kMaxDims merged dims. One thread per element in a grid-stride loop; each thread turns
// its row-major index into byte offsets. The dtype switch in the converting kernel is
// uniform across a launch, so it costs no divergence.
#include "kernels.h"

#include <cuda_runtime.h>

namespace aotishim::kernels {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H200 several times over; the grid-stride loop does the rest.
constexpr int64_t kMaxBlocks = 4096;

dim3 grid_for(int64_t numel) {
  int64_t blocks = (numel + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

struct Offsets {
  int64_t dst;
  int64_t src;
};

__device__ inline Offsets offsets_of(const StridedPlan& plan, int64_t index) {
  Offsets out{0, 0};
  for (int d = plan.ndim - 1; d >= 0; --d) {
    int64_t size = plan.sizes[d];
    int64_t i = index % size;
    index /= size;
    out.dst += i * plan.dst_strides[d];
    out.src += i * plan.src_strides[d];
  }
  return out;
}

struct alignas(16) Bytes16 {
  unsigned long long lo, hi;
};

template <typename Word>
__global__ void copy_words(char* dst, const char* src, StridedPlan plan, int64_t numel) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Offsets o = offsets_of(plan, i);
    *reinterpret_cast<Word*>(dst + o.dst) = *reinterpret_cast<const Word*>(src + o.src);
  }
}

template <typename Word>
__global__ void fill_words(char* dst, StridedPlan plan, int64_t numel, Word value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    *reinterpret_cast<Word*>(dst + offsets_of(plan, i).dst) = value;
  }
}

// ---- conversions, bit for bit as scalar_types.h does them on the host ----

__device__ inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    float value = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -value : value;
  }
  return __uint_as_float(bits);
}

__device__ inline uint16_t float_to_half(float value) {
  uint32_t f = __float_as_uint(value);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs >= 0x477ff000u) {
    return sign | 0x7c00u;
  }
  if (abs < 0x38800000u) {
    float shifted = __fadd_rn(__uint_as_float(abs), 0.5f);
    return sign | static_cast<uint16_t>(__float_as_uint(shifted) - 0x3f000000u);
  }
  uint32_t mantissa_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mantissa_odd;
  return sign | static_cast<uint16_t>(abs >> 13);
}

__device__ inline float bf16_to_float(uint16_t bits) { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }

__device__ inline uint16_t float_to_bf16(float value) {
  uint32_t f = __float_as_uint(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) {
    return 0x7fc0u;
  }
  uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

// One loaded element: the host converts from the source's own C++ type, so keep it exact.
struct Value {
  enum Kind { kSigned, kUnsigned, kFloat, kDouble } kind;
  int64_t i;
  uint64_t u;
  float f;
  double d;
};

// c10 dtype numbers (see scalar_types.h).
enum Dtype : int32_t {
  kUInt8 = 0, kInt8 = 1, kInt16 = 2, kInt32 = 3, kInt64 = 4, kHalf = 5, kFloat32 = 6, kFloat64 = 7,
  kBool = 11, kBFloat16 = 15, kUInt16 = 27, kUInt32 = 28, kUInt64 = 29,
};

template <typename T>
__device__ inline T load_as(const char* p) {
  return *reinterpret_cast<const T*>(p);
}

__device__ inline Value load(const char* p, int32_t dtype) {
  Value v{Value::kSigned, 0, 0, 0.0f, 0.0};
  switch (dtype) {
    case kUInt8: v.kind = Value::kUnsigned; v.u = load_as<uint8_t>(p); break;
    case kInt8: v.i = load_as<int8_t>(p); break;
    case kInt16: v.i = load_as<int16_t>(p); break;
    case kInt32: v.i = load_as<int32_t>(p); break;
    case kInt64: v.i = load_as<int64_t>(p); break;
    case kUInt16: v.kind = Value::kUnsigned; v.u = load_as<uint16_t>(p); break;
    case kUInt32: v.kind = Value::kUnsigned; v.u = load_as<uint32_t>(p); break;
    case kUInt64: v.kind = Value::kUnsigned; v.u = load_as<uint64_t>(p); break;
    case kBool: v.kind = Value::kUnsigned; v.u = load_as<bool>(p) ? 1u : 0u; break;
    // Half and bfloat16 convert through float on the host too.
    case kHalf: v.kind = Value::kFloat; v.f = half_to_float(load_as<uint16_t>(p)); break;
    case kBFloat16: v.kind = Value::kFloat; v.f = bf16_to_float(load_as<uint16_t>(p)); break;
    case kFloat32: v.kind = Value::kFloat; v.f = load_as<float>(p); break;
    default: v.kind = Value::kDouble; v.d = load_as<double>(p); break;  // kFloat64
  }
  return v;
}

// static_cast<T>(the source value), as the host's convert<T, S> does. A floating value
// goes to uint8 through int64 as torch does (c10's cast wraps -1.0 to 255); a direct
// conversion is undefined out of range and saturates to 0 on the GPU.
template <typename T>
__device__ inline T from_floating(double value) {
  if constexpr (sizeof(T) == 1 && static_cast<T>(-1) > T(0)) {
    return static_cast<T>(static_cast<int64_t>(value));
  } else {
    return static_cast<T>(value);
  }
}

template <typename T>
__device__ inline T cast(const Value& v) {
  switch (v.kind) {
    case Value::kSigned: return static_cast<T>(v.i);
    case Value::kUnsigned: return static_cast<T>(v.u);
    case Value::kFloat: return from_floating<T>(v.f);
    default: return from_floating<T>(v.d);
  }
}

__device__ inline bool nonzero(const Value& v) {
  switch (v.kind) {
    case Value::kSigned: return v.i != 0;
    case Value::kUnsigned: return v.u != 0;
    case Value::kFloat: return v.f != 0.0f;
    default: return v.d != 0.0;
  }
}

template <typename T>
__device__ inline void store_as(char* p, T value) {
  *reinterpret_cast<T*>(p) = value;
}

__device__ inline void store(char* p, int32_t dtype, const Value& v) {
  switch (dtype) {
    case kUInt8: store_as(p, cast<uint8_t>(v)); break;
    case kInt8: store_as(p, cast<int8_t>(v)); break;
    case kInt16: store_as(p, cast<int16_t>(v)); break;
    case kInt32: store_as(p, cast<int32_t>(v)); break;
    case kInt64: store_as(p, cast<int64_t>(v)); break;
    case kUInt16: store_as(p, cast<uint16_t>(v)); break;
    case kUInt32: store_as(p, cast<uint32_t>(v)); break;
    case kUInt64: store_as(p, cast<uint64_t>(v)); break;
    case kBool: store_as(p, nonzero(v)); break;
    case kHalf: store_as(p, float_to_half(cast<float>(v))); break;
    case kBFloat16: store_as(p, float_to_bf16(cast<float>(v))); break;
    case kFloat32: store_as(p, cast<float>(v)); break;
    default: store_as(p, cast<double>(v)); break;  // kFloat64
  }
}

__global__ void convert_elements(char* dst, int32_t dst_dtype, const char* src, int32_t src_dtype, StridedPlan plan,
                                 int64_t numel) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Offsets o = offsets_of(plan, i);
    store(dst + o.dst, dst_dtype, load(src + o.src, src_dtype));
  }
}

int launched() { return static_cast<int>(cudaGetLastError()); }

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

bool convertible(int32_t dtype) {
  switch (dtype) {
    case kUInt8: case kInt8: case kInt16: case kInt32: case kInt64: case kHalf: case kFloat32: case kFloat64:
    case kBool: case kBFloat16: case kUInt16: case kUInt32: case kUInt64:
      return true;
    default:
      return false;
  }
}

int copy_same_dtype(char* dst, const char* src, const StridedPlan& plan, int64_t numel, size_t element, void* stream) {
  (void)cudaGetLastError();  // a stale error is not this launch's
  dim3 grid = grid_for(numel);
  cudaStream_t s = as_stream(stream);
  switch (element) {
    case 1: copy_words<uint8_t><<<grid, kThreads, 0, s>>>(dst, src, plan, numel); break;
    case 2: copy_words<uint16_t><<<grid, kThreads, 0, s>>>(dst, src, plan, numel); break;
    case 4: copy_words<uint32_t><<<grid, kThreads, 0, s>>>(dst, src, plan, numel); break;
    case 8: copy_words<unsigned long long><<<grid, kThreads, 0, s>>>(dst, src, plan, numel); break;
    case 16: copy_words<Bytes16><<<grid, kThreads, 0, s>>>(dst, src, plan, numel); break;
    default: return -1;
  }
  return launched();
}

int copy_convert(
    char* dst, int32_t dst_dtype, const char* src, int32_t src_dtype, const StridedPlan& plan, int64_t numel,
    void* stream) {
  if (!convertible(dst_dtype) || !convertible(src_dtype)) {
    return -1;
  }
  (void)cudaGetLastError();
  convert_elements<<<grid_for(numel), kThreads, 0, as_stream(stream)>>>(dst, dst_dtype, src, src_dtype, plan, numel);
  return launched();
}

int fill(char* dst, const StridedPlan& plan, int64_t numel, const void* value, size_t element, void* stream) {
  (void)cudaGetLastError();
  dim3 grid = grid_for(numel);
  cudaStream_t s = as_stream(stream);
  // The value travels as a kernel argument: the caller's buffer may go away at once.
  switch (element) {
    case 1: fill_words<<<grid, kThreads, 0, s>>>(dst, plan, numel, *static_cast<const uint8_t*>(value)); break;
    case 2: fill_words<<<grid, kThreads, 0, s>>>(dst, plan, numel, *static_cast<const uint16_t*>(value)); break;
    case 4: fill_words<<<grid, kThreads, 0, s>>>(dst, plan, numel, *static_cast<const uint32_t*>(value)); break;
    case 8:
      fill_words<<<grid, kThreads, 0, s>>>(dst, plan, numel, *static_cast<const unsigned long long*>(value));
      break;
    case 16: fill_words<<<grid, kThreads, 0, s>>>(dst, plan, numel, *static_cast<const Bytes16*>(value)); break;
    default: return -1;
  }
  return launched();
}

}  // namespace aotishim::kernels
