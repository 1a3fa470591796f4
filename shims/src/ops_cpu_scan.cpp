// CPU cumsum: the fallback Inductor leaves for torch.cumsum in a default CPU compile
// (position ids from an attention mask, for one). Any strides; a new contiguous result.
#include "ops.h"

#include <cstring>
#include <memory>

namespace aotishim {

namespace {

// c10::ScalarType codes this op reads and writes.
constexpr int32_t kUInt8 = 0, kInt8 = 1, kInt16 = 2, kInt32 = 3, kInt64 = 4, kFloat32 = 6, kFloat64 = 7, kBool = 11;

bool is_integral(int32_t dtype) {
  return dtype == kUInt8 || dtype == kInt8 || dtype == kInt16 || dtype == kInt32 || dtype == kInt64 || dtype == kBool;
}

bool supported(int32_t dtype) { return is_integral(dtype) || dtype == kFloat32 || dtype == kFloat64; }

// One element as the accumulator type (double for floating, int64 for integral inputs).
template <typename Acc>
Acc load(const char* p, int32_t dtype) {
  switch (dtype) {
    case kUInt8:
      return static_cast<Acc>(*reinterpret_cast<const uint8_t*>(p));
    case kInt8:
      return static_cast<Acc>(*reinterpret_cast<const int8_t*>(p));
    case kInt16:
      return static_cast<Acc>(*reinterpret_cast<const int16_t*>(p));
    case kInt32:
      return static_cast<Acc>(*reinterpret_cast<const int32_t*>(p));
    case kInt64:
      return static_cast<Acc>(*reinterpret_cast<const int64_t*>(p));
    case kBool:
      return static_cast<Acc>(*reinterpret_cast<const bool*>(p) ? 1 : 0);
    case kFloat32:
      return static_cast<Acc>(*reinterpret_cast<const float*>(p));
    default:
      return static_cast<Acc>(*reinterpret_cast<const double*>(p));
  }
}

template <typename Acc>
void store(char* p, int32_t dtype, Acc value) {
  switch (dtype) {
    case kUInt8:
      *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(value);
      break;
    case kInt8:
      *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(value);
      break;
    case kInt16:
      *reinterpret_cast<int16_t*>(p) = static_cast<int16_t>(value);
      break;
    case kInt32:
      *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(value);
      break;
    case kInt64:
      *reinterpret_cast<int64_t*>(p) = static_cast<int64_t>(value);
      break;
    case kBool:
      *reinterpret_cast<bool*>(p) = value != Acc(0);
      break;
    case kFloat32:
      *reinterpret_cast<float*>(p) = static_cast<float>(value);
      break;
    default:
      *reinterpret_cast<double*>(p) = static_cast<double>(value);
      break;
  }
}

// Scans every line along `dim`: outer index over the other dims, running sum along dim.
// Like ATen on CPU, float32 accumulates in double and rounds each partial sum once.
template <typename Acc>
void scan(const Tensor& in, const Tensor& out, int64_t dim) {
  int64_t ndim = in.dim();
  int64_t length = ndim == 0 ? 1 : in.sizes[dim];
  int64_t lines = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d != dim) {
      lines *= in.sizes[d];
    }
  }
  size_t in_size = in.element_size();
  size_t out_size = out.element_size();
  int64_t in_step = ndim == 0 ? 0 : in.strides[dim];
  int64_t out_step = ndim == 0 ? 0 : out.strides[dim];
  Dims index(static_cast<size_t>(ndim), 0);
  for (int64_t line = 0; line < lines; ++line) {
    int64_t in_offset = 0, out_offset = 0;
    for (int64_t d = 0; d < ndim; ++d) {
      in_offset += index[d] * in.strides[d];
      out_offset += index[d] * out.strides[d];
    }
    Acc sum = Acc(0);
    for (int64_t i = 0; i < length; ++i) {
      sum += load<Acc>(in.data() + (in_offset + i * in_step) * static_cast<int64_t>(in_size), in.dtype);
      store<Acc>(out.data() + (out_offset + i * out_step) * static_cast<int64_t>(out_size), out.dtype, sum);
    }
    // Next line: an odometer over every dim but `dim`.
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (d == dim) {
        continue;
      }
      if (++index[d] < in.sizes[d]) {
        break;
      }
      index[d] = 0;
    }
  }
}

}  // namespace

}  // namespace aotishim

using namespace aotishim;

extern "C" {

AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cpu_cumsum", [&]() -> AOTITorchError {
    Tensor* in = nullptr;
    AOTISHIM_TRY(unwrap(self, &in, "self"));
    AOTISHIM_TRY(require_output(ret0, "ret0"));
    if (in->device_type() != kCPU) {
      return fail_format(AOTI_SHIM_E_DEVICE_MISMATCH, "cumsum: self is not a CPU tensor");
    }
    int64_t ndim = in->dim();
    int64_t wrapped = dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
    if (wrapped < 0 || wrapped >= (ndim == 0 ? 1 : ndim)) {
      return fail_format(
          AOTI_SHIM_E_OUT_OF_BOUNDS, "cumsum: dim %lld is out of range for a %lld-dim tensor",
          static_cast<long long>(dim), static_cast<long long>(ndim));
    }
    // torch's rule: the given dtype, else int64 for integral and bool inputs, else the input's.
    int32_t out_dtype = dtype != nullptr ? *dtype : (is_integral(in->dtype) ? kInt64 : in->dtype);
    if (!supported(in->dtype) || !supported(out_dtype)) {
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "cumsum: %s to %s is not supported (integers, bool, float32, float64)",
          dtype_name(in->dtype), dtype_name(out_dtype));
    }
    std::unique_ptr<Tensor> out;
    AOTISHIM_TRY(new_tensor(in->sizes, contiguous_strides(in->sizes), out_dtype, kCPU, 0, false, &out));
    if (out->numel() > 0) {
      if (is_integral(out_dtype)) {
        scan<int64_t>(*in, *out, wrapped);
      } else {
        scan<double>(*in, *out, wrapped);
      }
    }
    *ret0 = to_handle(out.release());
    return AOTI_SHIM_OK;
  });
}

}  // extern "C"
