// CPU convolution (1 to 3 spatial dims, groups, padding, dilation) as im2col + gemm.
#include "ops.h"

#include <array>
#include <vector>

namespace aotishim {

// torch's channels-last stride test (c10 is_channels_last_strides_2d/3d).
bool strides_like_channels_last(const Tensor& t) {
  Dims order;
  if (t.dim() == 4) {
    order = {1, 3, 2, 0};
  } else if (t.dim() == 5) {
    order = {1, 4, 3, 2, 0};
  } else {
    return false;
  }
  if (t.strides[1] == 0) {
    return false;
  }
  int64_t min = 0;
  for (int64_t d : order) {
    if (t.sizes[d] == 0 || t.strides[d] < min) {
      return false;
    }
    if (d == 0 && min == t.strides[1]) {
      return false;
    }
    min = t.strides[d] * t.sizes[d];
  }
  return true;
}

// Channels-last strides: C innermost, then the spatial dims from last to first, then N.
Dims channels_last_strides(const Dims& sizes) {
  Dims strides(sizes.size());
  int64_t running = 1;
  strides[1] = running;
  running *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = sizes.size() - 1; d >= 2; --d) {
    strides[d] = running;
    running *= std::max<int64_t>(sizes[d], 1);
  }
  strides[0] = running;
  return strides;
}

namespace {

constexpr int kMaxSpatial = 3;

AOTITorchError read_param(
    const int64_t* values, int64_t length, int spatial, const char* name, int64_t minimum,
    std::array<int64_t, kMaxSpatial>* out) {
  if (length != 1 && length != spatial) {
    return fail_format(
        AOTI_SHIM_E_INVALID_ARGUMENT, "%s has %lld values for %d spatial dims", name, static_cast<long long>(length),
        spatial);
  }
  if (values == nullptr) {
    return fail_format(AOTI_SHIM_E_NULL_ARGUMENT, "%s is null", name);
  }
  for (int s = 0; s < spatial; ++s) {
    int64_t value = values[length == 1 ? 0 : s];
    if (value < minimum) {
      return fail_format(
          AOTI_SHIM_E_INVALID_ARGUMENT, "%s %lld is below %lld", name, static_cast<long long>(value),
          static_cast<long long>(minimum));
    }
    (*out)[kMaxSpatial - spatial + s] = value;
  }
  return AOTI_SHIM_OK;
}

struct ConvShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  // Spatial dims right-aligned in arrays of 3; missing leading dims have size 1.
  std::array<int64_t, kMaxSpatial> in{1, 1, 1}, in_stride{0, 0, 0}, kernel{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, kMaxSpatial> stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  std::array<int64_t, kMaxSpatial> weight_stride{0, 0, 0};
};

template <typename T>
void run_convolution(const ConvShape& s, const Tensor& input, const Tensor& weight, const Tensor* bias, Tensor& out) {
  int64_t cin_g = s.in_channels / s.groups;
  int64_t cout_g = s.out_channels / s.groups;
  int64_t kernel_volume = s.kernel[0] * s.kernel[1] * s.kernel[2];
  int64_t out_volume = s.out[0] * s.out[1] * s.out[2];
  int64_t rows = cin_g * kernel_volume;

  // Weight as a contiguous [C_out, C_in/groups * kernel] matrix.
  std::vector<T> packed_weight(static_cast<size_t>(s.out_channels * rows));
  const T* w = reinterpret_cast<const T*>(weight.data());
  for (int64_t oc = 0; oc < s.out_channels; ++oc) {
    for (int64_t c = 0; c < cin_g; ++c) {
      for (int64_t k0 = 0; k0 < s.kernel[0]; ++k0) {
        for (int64_t k1 = 0; k1 < s.kernel[1]; ++k1) {
          for (int64_t k2 = 0; k2 < s.kernel[2]; ++k2) {
            int64_t row = ((c * s.kernel[0] + k0) * s.kernel[1] + k1) * s.kernel[2] + k2;
            packed_weight[static_cast<size_t>(oc * rows + row)] =
                w[oc * weight.strides[0] + c * weight.strides[1] + k0 * s.weight_stride[0] +
                  k1 * s.weight_stride[1] + k2 * s.weight_stride[2]];
          }
        }
      }
    }
  }

  std::vector<T> columns(static_cast<size_t>(rows * out_volume));
  const T* x = reinterpret_cast<const T*>(input.data());
  T* y = reinterpret_cast<T*>(out.data());
  int64_t out_spatial_stride = out.strides[out.dim() - 1];
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      // im2col: one row per (input channel, kernel offset), one column per output position.
      for (int64_t c = 0; c < cin_g; ++c) {
        const T* plane = x + n * input.strides[0] + (g * cin_g + c) * input.strides[1];
        for (int64_t k0 = 0; k0 < s.kernel[0]; ++k0) {
          for (int64_t k1 = 0; k1 < s.kernel[1]; ++k1) {
            for (int64_t k2 = 0; k2 < s.kernel[2]; ++k2) {
              int64_t row = ((c * s.kernel[0] + k0) * s.kernel[1] + k1) * s.kernel[2] + k2;
              T* col = columns.data() + row * out_volume;
              for (int64_t o0 = 0; o0 < s.out[0]; ++o0) {
                int64_t i0 = o0 * s.stride[0] - s.padding[0] + k0 * s.dilation[0];
                for (int64_t o1 = 0; o1 < s.out[1]; ++o1) {
                  int64_t i1 = o1 * s.stride[1] - s.padding[1] + k1 * s.dilation[1];
                  T* dst = col + (o0 * s.out[1] + o1) * s.out[2];
                  bool inside = i0 >= 0 && i0 < s.in[0] && i1 >= 0 && i1 < s.in[1];
                  for (int64_t o2 = 0; o2 < s.out[2]; ++o2) {
                    int64_t i2 = o2 * s.stride[2] - s.padding[2] + k2 * s.dilation[2];
                    dst[o2] = (inside && i2 >= 0 && i2 < s.in[2])
                        ? plane[i0 * s.in_stride[0] + i1 * s.in_stride[1] + i2 * s.in_stride[2]]
                        : T(0);
                  }
                }
              }
            }
          }
        }
      }
      GemmArgs<T> args;
      args.m = cout_g;
      args.n = out_volume;
      args.k = rows;
      args.a = packed_weight.data() + g * cout_g * rows;
      args.a_s0 = rows;
      args.a_s1 = 1;
      args.b = columns.data();
      args.b_s0 = out_volume;
      args.b_s1 = 1;
      args.c = y + n * out.strides[0] + g * cout_g * out.strides[1];
      args.c_s0 = out.strides[1];
      args.c_s1 = out_spatial_stride;
      if (bias != nullptr) {
        args.bias = reinterpret_cast<const T*>(bias->data()) + g * cout_g * bias->strides[0];
        args.bias_s0 = bias->strides[0];
        args.bias_s1 = 0;
        args.beta = T(1);
      }
      gemm(args);
    }
  }
}

AOTITorchError convolution(
    const Tensor& input, const Tensor& weight, const Tensor* bias, const int64_t* stride, int64_t stride_len,
    const int64_t* padding, int64_t padding_len, const int64_t* dilation, int64_t dilation_len, int32_t transposed,
    int64_t groups, AtenTensorHandle* ret) {
  AOTISHIM_TRY(require_output(ret, "ret0"));
  if (transposed != 0) {
    return fail_format(AOTI_SHIM_E_UNSUPPORTED, "transposed convolution is not supported");
  }
  int64_t ndim = input.dim();
  if (ndim < 3 || ndim > 2 + kMaxSpatial) {
    return fail_format(
        AOTI_SHIM_E_RANK_MISMATCH, "input must have 3 to 5 dims, it has %lld", static_cast<long long>(ndim));
  }
  if (weight.dim() != ndim) {
    return fail_format(
        AOTI_SHIM_E_RANK_MISMATCH, "weight has %lld dims, input has %lld", static_cast<long long>(weight.dim()),
        static_cast<long long>(ndim));
  }
  const Tensor* operands[] = {&input, &weight, bias};
  AOTISHIM_TRY(check_cpu_float(operands, 3));
  int spatial = static_cast<int>(ndim - 2);
  ConvShape s;
  AOTISHIM_TRY(read_param(stride, stride_len, spatial, "stride", 1, &s.stride));
  AOTISHIM_TRY(read_param(padding, padding_len, spatial, "padding", 0, &s.padding));
  AOTISHIM_TRY(read_param(dilation, dilation_len, spatial, "dilation", 1, &s.dilation));
  if (groups < 1) {
    return fail_format(AOTI_SHIM_E_INVALID_ARGUMENT, "groups %lld is below 1", static_cast<long long>(groups));
  }
  s.groups = groups;
  s.batch = input.sizes[0];
  s.in_channels = input.sizes[1];
  s.out_channels = weight.sizes[0];
  if (s.in_channels % groups != 0 || s.out_channels % groups != 0 || weight.sizes[1] * groups != s.in_channels) {
    return fail_format(
        AOTI_SHIM_E_SHAPE_MISMATCH, "weight [%lld, %lld, ...] with groups %lld does not fit %lld input channels",
        static_cast<long long>(weight.sizes[0]), static_cast<long long>(weight.sizes[1]),
        static_cast<long long>(groups), static_cast<long long>(s.in_channels));
  }
  if (bias != nullptr && (bias->dim() != 1 || bias->sizes[0] != s.out_channels)) {
    return fail_format(AOTI_SHIM_E_SHAPE_MISMATCH, "bias must be 1-dim of size %lld", static_cast<long long>(s.out_channels));
  }
  Dims out_sizes = {s.batch, s.out_channels};
  for (int d = 0; d < spatial; ++d) {
    int a = kMaxSpatial - spatial + d;
    s.in[a] = input.sizes[2 + d];
    s.in_stride[a] = input.strides[2 + d];
    s.kernel[a] = weight.sizes[2 + d];
    s.weight_stride[a] = weight.strides[2 + d];
    int64_t extent = s.dilation[a] * (s.kernel[a] - 1) + 1;
    int64_t padded = s.in[a] + 2 * s.padding[a];
    if (padded < extent) {
      return fail_format(
          AOTI_SHIM_E_SHAPE_MISMATCH, "kernel extent %lld exceeds the padded input %lld in spatial dim %d",
          static_cast<long long>(extent), static_cast<long long>(padded), d);
    }
    s.out[a] = (padded - extent) / s.stride[a] + 1;
    out_sizes.push_back(s.out[a]);
  }
  // The output layout torch's CPU backends produce (and FakeTensor reports to Inductor):
  // channels-last when the input or the weight is, except on the Slow3d backend, which
  // ATen picks for 3-d convolutions that are float64 or that its mkldnn heuristic deems small.
  bool either_channels_last = strides_like_channels_last(input) || strides_like_channels_last(weight);
  bool mkldnn_3d = input.dtype == 6 &&
      (groups > 1 || (s.kernel[2] > 3 && s.kernel[1] > 3) || s.batch > 1 ||
       s.batch * s.in_channels * s.in[0] * s.in[1] > 20480);
  bool channels_last = either_channels_last && (ndim == 4 || (ndim == 5 && mkldnn_3d));
  Dims out_strides =
      channels_last ? channels_last_strides(out_sizes) : contiguous_strides(out_sizes);
  std::unique_ptr<Tensor> out;
  AOTISHIM_TRY(new_tensor(out_sizes, out_strides, input.dtype, kCPU, -1, false, &out));
  if (out->numel() > 0) {
    dispatch_float(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      run_convolution<T>(s, input, weight, bias, *out);
    });
  }
  *ret = to_handle(out.release());
  return AOTI_SHIM_OK;
}

}  // namespace
}  // namespace aotishim

using namespace aotishim;

extern "C" AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t transposed, const int64_t* /*output_padding*/, int64_t /*output_padding_len_*/,
    int64_t groups, AtenTensorHandle* ret0) {
  return guarded("aoti_torch_cpu_convolution", [&]() -> AOTITorchError {
    Tensor *x = nullptr, *w = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(input, &x, "input"));
    AOTISHIM_TRY(unwrap(weight, &w, "weight"));
    AOTISHIM_TRY(unwrap_optional(bias, &b, "bias"));
    return convolution(
        *x, *w, b, stride, stride_len_, padding, padding_len_, dilation, dilation_len_, transposed, groups, ret0);
  });
}
