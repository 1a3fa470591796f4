// Element types for the dtypes the shims compute with, and conversions between them.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace aotishim {

// IEEE binary16, stored as bits.
struct Half {
  uint16_t bits;
  Half() = default;
  explicit Half(float value) : bits(from_float(value)) {}
  operator float() const { return to_float(bits); }

  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits32;
    if (exponent == 0x1fu) {  // inf or nan
      bits32 = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {  // normal
      bits32 = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {  // zero
      bits32 = sign;
    } else {  // subnormal: value = mantissa * 2^-24
      float value = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
      return sign ? -value : value;
    }
    float out;
    std::memcpy(&out, &bits32, sizeof(out));
    return out;
  }

  // Round to nearest even.
  static uint16_t from_float(float value) {
    uint32_t f;
    std::memcpy(&f, &value, sizeof(f));
    uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
    uint32_t abs = f & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or nan
      return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
    }
    if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
      return sign | 0x7c00u;
    }
    if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
      float magnitude;
      std::memcpy(&magnitude, &abs, sizeof(magnitude));
      // Adding 0.5 pushes the value's bits so the float rounding does the half rounding.
      float shifted = magnitude + 0.5f;
      uint32_t shifted_bits;
      std::memcpy(&shifted_bits, &shifted, sizeof(shifted_bits));
      return sign | static_cast<uint16_t>(shifted_bits - 0x3f000000u);
    }
    uint32_t mantissa_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mantissa_odd;  // rebias exponent (-112 << 23) and round
    return sign | static_cast<uint16_t>(abs >> 13);
  }
};

// bfloat16: the top half of a float32.
struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(from_float(value)) {}
  operator float() const {
    uint32_t f = static_cast<uint32_t>(bits) << 16;
    float out;
    std::memcpy(&out, &f, sizeof(out));
    return out;
  }
  static uint16_t from_float(float value) {
    uint32_t f;
    std::memcpy(&f, &value, sizeof(f));
    if ((f & 0x7fffffffu) > 0x7f800000u) {
      return 0x7fc0u;  // nan
    }
    uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
    return static_cast<uint16_t>((f + rounding) >> 16);
  }
};

template <typename T>
constexpr bool is_reduced_float = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Converts one value as torch's copy_ does (bool: nonzero is true).
template <typename D, typename S>
inline D convert(S value) {
  if constexpr (is_reduced_float<S>) {
    return convert<D, float>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<D, bool>) {
    return value != S(0);
  } else if constexpr (is_reduced_float<D>) {
    return D(static_cast<float>(value));
  } else if constexpr (std::is_same_v<D, uint8_t> && std::is_floating_point_v<S>) {
    // As torch: through int64, so -1.0 wraps to 255 (a direct cast is undefined out of range).
    return static_cast<D>(static_cast<int64_t>(value));
  } else {
    return static_cast<D>(value);
  }
}

// Calls fn(T{}) with the C++ type of a computable dtype; returns false for other dtypes.
template <typename Fn>
inline bool dispatch_dtype(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case 0: fn(uint8_t{}); return true;
    case 1: fn(int8_t{}); return true;
    case 2: fn(int16_t{}); return true;
    case 3: fn(int32_t{}); return true;
    case 4: fn(int64_t{}); return true;
    case 5: fn(Half{}); return true;
    case 6: fn(float{}); return true;
    case 7: fn(double{}); return true;
    case 11: fn(bool{}); return true;
    case 15: fn(BFloat16{}); return true;
    case 27: fn(uint16_t{}); return true;
    case 28: fn(uint32_t{}); return true;
    case 29: fn(uint64_t{}); return true;
    default: return false;
  }
}

// Calls fn(D{}, S{}) with the C++ types of a conversion's destination and source dtypes;
// returns false when either is not computable.
template <typename Fn>
inline bool dispatch_dtype_pair(int32_t dst, int32_t src, Fn&& fn) {
  bool known = false;
  dispatch_dtype(dst, [&](auto dst_type) {
    known = dispatch_dtype(src, [&](auto src_type) { fn(dst_type, src_type); });
  });
  return known;
}

}  // namespace aotishim
