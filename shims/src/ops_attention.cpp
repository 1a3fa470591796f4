// CPU scaled dot-product attention (the flash-attention-for-CPU fallback), float32/float64.
#include "ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace aotishim {
namespace {

struct MaskView {
  const char* data = nullptr;
  int32_t dtype = 6;
  int64_t strides[4] = {0, 0, 0, 0};  // elements, 0 where broadcast
};

template <typename T>
T mask_value(const MaskView& mask, int64_t b, int64_t h, int64_t l, int64_t s) {
  int64_t offset = b * mask.strides[0] + h * mask.strides[1] + l * mask.strides[2] + s * mask.strides[3];
  if (mask.dtype == 11) {
    bool keep = reinterpret_cast<const bool*>(mask.data)[offset];
    return keep ? T(0) : -std::numeric_limits<T>::infinity();
  }
  return reinterpret_cast<const T*>(mask.data)[offset];
}

template <typename T>
void run_attention(
    const Tensor& q, const Tensor& k, const Tensor& v, const MaskView* mask, bool causal, T scale, Tensor& out,
    Tensor& lse) {
  int64_t batch = q.sizes[0], heads = q.sizes[1], lq = q.sizes[2], e = q.sizes[3];
  int64_t lk = k.sizes[2], ev = v.sizes[3];
  const T* qd = reinterpret_cast<const T*>(q.data());
  const T* kd = reinterpret_cast<const T*>(k.data());
  const T* vd = reinterpret_cast<const T*>(v.data());
  T* od = reinterpret_cast<T*>(out.data());
  T* ld = reinterpret_cast<T*>(lse.data());
  std::vector<T> scores(static_cast<size_t>(lk));
  std::vector<T> acc(static_cast<size_t>(ev));
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t l = 0; l < lq; ++l) {
        const T* qrow = qd + b * q.strides[0] + h * q.strides[1] + l * q.strides[2];
        T max_score = neg_inf;
        for (int64_t s = 0; s < lk; ++s) {
          T score;
          if (causal && s > l) {
            score = neg_inf;
          } else {
            const T* krow = kd + b * k.strides[0] + h * k.strides[1] + s * k.strides[2];
            T dot = T(0);
            for (int64_t i = 0; i < e; ++i) {
              dot += qrow[i * q.strides[3]] * krow[i * k.strides[3]];
            }
            score = dot * scale;
            if (mask != nullptr) {
              score += mask_value<T>(*mask, b, h, l, s);
            }
          }
          scores[static_cast<size_t>(s)] = score;
          max_score = std::max(max_score, score);
        }
        std::fill(acc.begin(), acc.end(), T(0));
        T total = T(0);
        if (max_score != neg_inf) {
          for (int64_t s = 0; s < lk; ++s) {
            T p = std::exp(scores[static_cast<size_t>(s)] - max_score);
            total += p;
            const T* vrow = vd + b * v.strides[0] + h * v.strides[1] + s * v.strides[2];
            for (int64_t j = 0; j < ev; ++j) {
              acc[static_cast<size_t>(j)] += p * vrow[j * v.strides[3]];
            }
          }
        }
        T* orow = od + b * out.strides[0] + h * out.strides[1] + l * out.strides[2];
        for (int64_t j = 0; j < ev; ++j) {
          orow[j * out.strides[3]] = total > T(0) ? acc[static_cast<size_t>(j)] / total : T(0);
        }
        ld[b * lse.strides[0] + h * lse.strides[1] + l * lse.strides[2]] =
            total > T(0) ? max_score + std::log(total) : neg_inf;
      }
    }
  }
}

AOTITorchError attention(
    const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p, bool causal, const Tensor* mask,
    const double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  if (dropout_p != 0.0) {
    return fail_format(AOTI_SHIM_E_UNSUPPORTED, "dropout_p %g: attention dropout is not supported", dropout_p);
  }
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "query, key and value must be 4-dim [B, H, L, E]");
  }
  const Tensor* operands[] = {&q, &k, &v};
  AOTISHIM_TRY(check_cpu_float(operands, 3));
  int64_t batch = q.sizes[0], heads = q.sizes[1], lq = q.sizes[2], e = q.sizes[3];
  int64_t lk = k.sizes[2], ev = v.sizes[3];
  if (k.sizes[0] != batch || v.sizes[0] != batch || k.sizes[1] != heads || v.sizes[1] != heads ||
      k.sizes[3] != e || v.sizes[2] != lk) {
    return fail_format(AOTI_SHIM_E_SHAPE_MISMATCH, "query, key and value shapes do not match");
  }
  MaskView mask_view;
  if (mask != nullptr) {
    if (mask->device_type() != kCPU) {
      return fail_format(AOTI_SHIM_E_DEVICE_MISMATCH, "attn_mask is not a CPU tensor");
    }
    if (mask->dtype != 11 && mask->dtype != q.dtype) {
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "attn_mask is %s: it must be bool or %s", dtype_name(mask->dtype),
          dtype_name(q.dtype));
    }
    if (mask->dim() > 4) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "attn_mask has more than 4 dims");
    }
    const int64_t target[4] = {batch, heads, lq, lk};
    int64_t lead = 4 - mask->dim();
    for (int64_t d = lead; d < 4; ++d) {
      int64_t size = mask->sizes[d - lead];
      if (size != target[d] && size != 1) {
        return fail_format(AOTI_SHIM_E_SHAPE_MISMATCH, "attn_mask does not broadcast to [B, H, L, S]");
      }
      mask_view.strides[d] = size == 1 ? 0 : mask->strides[d - lead];
    }
    mask_view.data = mask->data();
    mask_view.dtype = mask->dtype;
  }
  // Layouts as torch's meta function: output like empty_like(query), logsumexp [B, L, H] transposed.
  Dims out_sizes = {batch, heads, lq, ev};
  Dims out_strides =
      (ev == e && non_overlapping_and_dense(q)) ? q.strides : contiguous_strides(out_sizes);
  std::unique_ptr<Tensor> out;
  std::unique_ptr<Tensor> lse;
  AOTISHIM_TRY(new_tensor(out_sizes, out_strides, q.dtype, kCPU, -1, false, &out));
  AOTISHIM_TRY(new_tensor({batch, heads, lq}, {lq * heads, 1, heads}, q.dtype, kCPU, -1, false, &lse));
  double softmax_scale = scale != nullptr ? *scale : 1.0 / std::sqrt(static_cast<double>(e));
  dispatch_float(q.dtype, [&](auto zero) {
    using T = decltype(zero);
    run_attention<T>(q, k, v, mask ? &mask_view : nullptr, causal, static_cast<T>(softmax_scale), *out, *lse);
  });
  deliver(ret0, std::move(out));
  deliver(ret1, std::move(lse));
  return AOTI_SHIM_OK;
}

}  // namespace
}  // namespace aotishim

using namespace aotishim;

extern "C" AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return guarded("aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu", [&]() -> AOTITorchError {
    Tensor *q = nullptr, *k = nullptr, *v = nullptr, *m = nullptr;
    AOTISHIM_TRY(unwrap(query, &q, "query"));
    AOTISHIM_TRY(unwrap(key, &k, "key"));
    AOTISHIM_TRY(unwrap(value, &v, "value"));
    AOTISHIM_TRY(unwrap_optional(attn_mask, &m, "attn_mask"));
    return attention(*q, *k, *v, dropout_p, is_causal != 0, m, scale, ret0, ret1);
  });
}
