// CPU fallback ops against hand-computed references.
#include "helpers.h"

#include <cmath>
#include <limits>

using namespace testing_helpers;

namespace {
const std::vector<float> kMat1 = {1, 2, 3, 4, 5, 6};  // [[1,2,3],[4,5,6]]
const std::vector<float> kMat2 = {1, 0, 0, 1, 1, 1};  // [[1,0],[0,1],[1,1]]
// kMat1 @ kMat2 = [[4,5],[10,11]]
}  // namespace

TEST(ops, addmm_out) {
  Owned a = tensor({2, 3}, kMat1);
  Owned b = tensor({3, 2}, kMat2);
  Owned bias = tensor({2}, {10, 20});
  Owned out = empty({2, 2}, {});
  CHECK_OK(aoti_torch_cpu_addmm_out(out, bias, a, b, 0.5, 2.0));
  CHECK_EQ(values<float>(out), (std::vector<float>{13, 20, 25, 32}));
  // mat2 as a transposed view (a Linear weight), a column-major output, a column bias.
  Owned bt = tensor({3, 2}, kMat2, {1, 3});
  Owned out_t = empty({2, 2}, {1, 2});
  Owned column_bias = tensor({2, 1}, {1, 2});
  CHECK_OK(aoti_torch_cpu_addmm_out(out_t, column_bias, a, bt, 1.0, 1.0));
  CHECK_EQ(values<float>(out_t), (std::vector<float>{5, 6, 12, 13}));
  // beta = 0 ignores the bias, NaN included.
  Owned nan_bias = tensor({2, 2}, std::vector<float>(4, std::nanf("")));
  CHECK_OK(aoti_torch_cpu_addmm_out(out, nan_bias, a, b, 0.0, 2.0));
  CHECK_EQ(values<float>(out), (std::vector<float>{8, 10, 20, 22}));
  // float64
  Owned a64 = tensor64({2, 3}, {1, 2, 3, 4, 5, 6});
  Owned b64 = tensor64({3, 2}, {1, 0, 0, 1, 1, 1});
  Owned bias64 = tensor64({2, 2}, {1, 1, 1, 1});
  Owned out64 = empty({2, 2}, {}, kFloat64);
  CHECK_OK(aoti_torch_cpu_addmm_out(out64, bias64, a64, b64, 1.0, 1.0));
  CHECK_EQ(values<double>(out64), (std::vector<double>{5, 6, 11, 12}));
}

TEST(ops, addmm_tiles_and_strides_against_loops) {
  // Sizes that are not multiples of the register tile, a transposed mat1 and a row bias.
  const int64_t m = 7, k = 13, n = 37;
  std::vector<float> av(m * k), bv(k * n), biasv(n);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>((i * 13) % 17) * 0.25f - 2.0f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>((i * 7) % 19) * 0.125f - 1.0f;
  for (size_t i = 0; i < biasv.size(); ++i) biasv[i] = static_cast<float>(i) * 0.5f;
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) sum += double(av[i * k + kk]) * bv[kk * n + j];
      want[i * n + j] = static_cast<float>(1.5 * sum + 0.5 * biasv[j]);
    }
  Owned a = tensor({m, k}, av, {1, m});
  Owned b = tensor({k, n}, bv);
  Owned bias = tensor({n}, biasv);
  Owned out = empty({m, n}, {});
  CHECK_OK(aoti_torch_cpu_addmm_out(out, bias, a, b, 0.5, 1.5));
  check_values(values<float>(out), want, 1e-4);
}

TEST(ops, addmm_bad_input) {
  Owned a = tensor({2, 3}, kMat1);
  Owned b = tensor({3, 2}, kMat2);
  Owned bias = tensor({2}, {10, 20});
  Owned out = empty({2, 2}, {});
  Owned wrong_k = tensor({2, 2}, {1, 2, 3, 4});
  CHECK_EQ(aoti_torch_cpu_addmm_out(out, bias, a, wrong_k, 1, 1), AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned wrong_out = empty({3, 2}, {});
  CHECK_EQ(aoti_torch_cpu_addmm_out(wrong_out, bias, a, b, 1, 1), AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned wrong_bias = tensor({3}, {1, 2, 3});
  CHECK_EQ(aoti_torch_cpu_addmm_out(out, wrong_bias, a, b, 1, 1), AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned vector = tensor({3}, {1, 2, 3});
  CHECK_EQ(aoti_torch_cpu_addmm_out(out, bias, vector, b, 1, 1), AOTI_SHIM_E_RANK_MISMATCH);
  Owned b64 = tensor64({3, 2}, {1, 0, 0, 1, 1, 1});
  CHECK_EQ(aoti_torch_cpu_addmm_out(out, bias, a, b64, 1, 1), AOTI_SHIM_E_DTYPE_MISMATCH);
  Owned ints = empty({3, 2}, {}, 3);
  CHECK_EQ(aoti_torch_cpu_addmm_out(out, bias, a, ints, 1, 1), AOTI_SHIM_E_DTYPE_MISMATCH);
  CHECK_EQ(aoti_torch_cpu_addmm_out(out, nullptr, a, b, 1, 1), AOTI_SHIM_E_NULL_HANDLE);
}

TEST(ops, mm_and_bmm) {
  Owned a = tensor({2, 3}, kMat1);
  Owned b = tensor({3, 2}, kMat2);
  Owned out = empty({2, 2}, {});
  CHECK_OK(aoti_torch_cpu_mm_out(out, a, b));
  CHECK_EQ(values<float>(out), (std::vector<float>{4, 5, 10, 11}));

  std::vector<float> batch_a = kMat1;
  batch_a.insert(batch_a.end(), {1, 0, 0, 0, 0, 1});  // picks rows 0 and 2 of mat2
  std::vector<float> batch_b = kMat2;
  batch_b.insert(batch_b.end(), kMat2.begin(), kMat2.end());
  Owned ba = tensor({2, 2, 3}, batch_a);
  Owned bb = tensor({2, 3, 2}, batch_b);
  Owned bout = empty({2, 2, 2}, {});
  CHECK_OK(aoti_torch_cpu_bmm_out(bout, ba, bb));
  CHECK_EQ(values<float>(bout), (std::vector<float>{4, 5, 10, 11, 1, 0, 1, 1}));
  Owned short_batch = empty({1, 2, 2}, {});
  CHECK_EQ(aoti_torch_cpu_bmm_out(short_batch, ba, bb), AOTI_SHIM_E_SHAPE_MISMATCH);
  CHECK_EQ(aoti_torch_cpu_bmm_out(out, ba, bb), AOTI_SHIM_E_RANK_MISMATCH);
}

namespace {

// Runs a 2-d convolution with the same stride/padding/dilation in both dims.
Owned conv(AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle bias, int64_t stride, int64_t padding,
           int64_t dilation, int64_t groups, int64_t spatial = 2) {
  std::vector<int64_t> s(spatial, stride), p(spatial, padding), d(spatial, dilation), op(spatial, 0);
  Owned out;
  AtenTensorHandle bias_handle = bias;
  CHECK_OK(aoti_torch_cpu_convolution(input, weight, bias ? &bias_handle : nullptr, s.data(), spatial, p.data(),
                                      spatial, d.data(), spatial, 0, op.data(), spatial, groups, out.out()));
  return out;
}

const std::vector<float> kImage = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3x3
const std::vector<float> kKernel = {1, 2, 3, 4};                // 2x2

}  // namespace

TEST(ops, convolution_hand_computed) {
  Owned x = tensor({1, 1, 3, 3}, kImage);
  Owned w = tensor({1, 1, 2, 2}, kKernel);
  Owned bias = tensor({1}, {1});
  Owned plain = conv(x, w, nullptr, 1, 0, 1, 1);
  CHECK_EQ(sizes_of(plain), (std::vector<int64_t>{1, 1, 2, 2}));
  CHECK_EQ(values<float>(plain), (std::vector<float>{37, 47, 67, 77}));
  Owned biased = conv(x, w, bias, 1, 0, 1, 1);
  CHECK_EQ(values<float>(biased), (std::vector<float>{38, 48, 68, 78}));
  Owned padded = conv(x, w, nullptr, 2, 1, 1, 1);
  CHECK_EQ(sizes_of(padded), (std::vector<int64_t>{1, 1, 2, 2}));
  CHECK_EQ(values<float>(padded), (std::vector<float>{4, 18, 36, 77}));
  Owned dilated = conv(x, w, nullptr, 1, 0, 2, 1);
  CHECK_EQ(sizes_of(dilated), (std::vector<int64_t>{1, 1, 1, 1}));
  CHECK_EQ(values<float>(dilated), (std::vector<float>{64}));
  // Two groups of one channel each.
  Owned x2 = tensor({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Owned w2 = tensor({2, 1, 1, 1}, {2, 3});
  Owned grouped = conv(x2, w2, nullptr, 1, 0, 1, 2);
  CHECK_EQ(values<float>(grouped), (std::vector<float>{2, 4, 6, 8, 15, 18, 21, 24}));
  // 1-d and 3-d.
  Owned x1 = tensor({1, 1, 5}, {1, 2, 3, 4, 5});
  Owned w1 = tensor({1, 1, 3}, {1, 0, -1});
  Owned one = conv(x1, w1, nullptr, 1, 0, 1, 1, 1);
  CHECK_EQ(values<float>(one), (std::vector<float>{-2, -2, -2}));
  Owned x3 = tensor({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Owned w3 = tensor({1, 1, 2, 2, 2}, std::vector<float>(8, 1));
  Owned three = conv(x3, w3, nullptr, 1, 0, 1, 1, 3);
  CHECK_EQ(values<float>(three), (std::vector<float>{36}));
}

TEST(ops, convolution_multichannel_and_channels_last) {
  // 2 images, 3 input channels, 4 output channels, 5x5, 3x3 kernel, padding 1, against direct loops.
  const int64_t n = 2, c = 3, o = 4, h = 5, k = 3;
  std::vector<float> xv(n * c * h * h), wv(o * c * k * k), bv(o);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>((i * 5) % 7) - 3.0f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i);
  std::vector<float> want(n * o * h * h);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t xx = 0; xx < h; ++xx) {
          float sum = bv[oc];
          for (int64_t ic = 0; ic < c; ++ic)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                int64_t iy = y - 1 + ky, ix = xx - 1 + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= h) continue;
                sum += xv[((b * c + ic) * h + iy) * h + ix] * wv[((oc * c + ic) * k + ky) * k + kx];
              }
          want[((b * o + oc) * h + y) * h + xx] = sum;
        }
  Owned x = tensor({n, c, h, h}, xv);
  Owned w = tensor({o, c, k, k}, wv);
  Owned bias = tensor({o}, bv);
  Owned out = conv(x, w, bias, 1, 1, 1, 1);
  CHECK_EQ(strides_of(out), (std::vector<int64_t>{o * h * h, h * h, h, 1}));
  check_values(values<float>(out), want, 1e-4);
  // A channels-last input gives a channels-last output (torch's meta function), same values.
  Owned x_cl = tensor({n, c, h, h}, xv, {h * h * c, 1, h * c, c});
  Owned out_cl = conv(x_cl, w, bias, 1, 1, 1, 1);
  CHECK_EQ(strides_of(out_cl), (std::vector<int64_t>{h * h * o, 1, h * o, o}));
  check_values(values<float>(out_cl), want, 1e-4);
}

TEST(ops, convolution_bad_input) {
  Owned x = tensor({1, 1, 3, 3}, kImage);
  Owned w = tensor({1, 1, 2, 2}, kKernel);
  int64_t one[] = {1}, zero[] = {0}, two_values[] = {1, 1, 1};
  Owned out;
  AtenTensorHandle result = sentinel();
  CHECK_EQ(aoti_torch_cpu_convolution(x, w, nullptr, one, 1, zero, 1, one, 1, 1, zero, 1, 1, &result),
           AOTI_SHIM_E_UNSUPPORTED);
  CHECK_EQ(aoti_torch_cpu_convolution(x, w, nullptr, zero, 1, zero, 1, one, 1, 0, zero, 1, 1, &result),
           AOTI_SHIM_E_INVALID_ARGUMENT);
  CHECK_EQ(aoti_torch_cpu_convolution(x, w, nullptr, two_values, 3, zero, 1, one, 1, 0, zero, 1, 1, &result),
           AOTI_SHIM_E_INVALID_ARGUMENT);
  CHECK_EQ(aoti_torch_cpu_convolution(x, w, nullptr, one, 1, zero, 1, one, 1, 0, zero, 1, 0, &result),
           AOTI_SHIM_E_INVALID_ARGUMENT);
  CHECK_EQ(aoti_torch_cpu_convolution(x, w, nullptr, one, 1, zero, 1, one, 1, 0, zero, 1, 2, &result),
           AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned big_kernel = tensor({1, 1, 4, 4}, std::vector<float>(16, 1));
  CHECK_EQ(aoti_torch_cpu_convolution(x, big_kernel, nullptr, one, 1, zero, 1, one, 1, 0, zero, 1, 1, &result),
           AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned w3 = tensor({1, 1, 2}, {1, 1});
  CHECK_EQ(aoti_torch_cpu_convolution(x, w3, nullptr, one, 1, zero, 1, one, 1, 0, zero, 1, 1, &result),
           AOTI_SHIM_E_RANK_MISMATCH);
  Owned bad_bias = tensor({2}, {1, 2});
  AtenTensorHandle bias_handle = bad_bias;
  CHECK_EQ(aoti_torch_cpu_convolution(x, w, &bias_handle, one, 1, zero, 1, one, 1, 0, zero, 1, 1, &result),
           AOTI_SHIM_E_SHAPE_MISMATCH);
  CHECK_EQ(aoti_torch_cpu_convolution(x, w, nullptr, one, 1, zero, 1, one, 1, 0, zero, 1, 1, nullptr),
           AOTI_SHIM_E_NULL_ARGUMENT);
  CHECK(result == sentinel());
}

namespace {
struct Attention {
  Owned out;
  Owned lse;
};

Attention attend(AtenTensorHandle q, AtenTensorHandle k, AtenTensorHandle v, bool causal, AtenTensorHandle mask,
                 const double* scale) {
  Attention a;
  AtenTensorHandle mask_handle = mask;
  CHECK_OK(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
      q, k, v, 0.0, causal ? 1 : 0, mask ? &mask_handle : nullptr, const_cast<double*>(scale), a.out.out(),
      a.lse.out()));
  return a;
}
}  // namespace

TEST(ops, attention_hand_computed) {
  // B = H = 1, L = S = 2, E = Ev = 1: scores are q_l * k_s.
  Owned q = tensor({1, 1, 2, 1}, {1, 2});
  Owned k = tensor({1, 1, 2, 1}, {1, 0});
  Owned v = tensor({1, 1, 2, 1}, {10, 20});
  const double e = std::exp(1.0);
  Attention plain = attend(q, k, v, false, nullptr, nullptr);
  check_values(values<float>(plain.out),
               std::vector<float>{static_cast<float>((10 * e + 20) / (e + 1)),
                                  static_cast<float>((10 * e * e + 20) / (e * e + 1))});
  check_values(values<float>(plain.lse),
               std::vector<float>{static_cast<float>(std::log(e + 1)), static_cast<float>(std::log(e * e + 1))});
  // Layouts follow torch's meta function: output like the query, logsumexp [B, L, H] transposed.
  CHECK_EQ(strides_of(plain.out), strides_of(q));
  CHECK_EQ(sizes_of(plain.lse), (std::vector<int64_t>{1, 1, 2}));
  CHECK_EQ(strides_of(plain.lse), (std::vector<int64_t>{2, 1, 1}));

  Attention causal = attend(q, k, v, true, nullptr, nullptr);
  check_values(values<float>(causal.out),
               std::vector<float>{10, static_cast<float>((10 * e * e + 20) / (e * e + 1))});
  check_values(values<float>(causal.lse), std::vector<float>{1, static_cast<float>(std::log(e * e + 1))});

  Owned keep = empty({2, 2}, {}, 11);
  fill<bool>(keep, {true, false, false, true});
  Attention masked = attend(q, k, v, false, keep, nullptr);
  check_values(values<float>(masked.out), std::vector<float>{10, 20});
  check_values(values<float>(masked.lse), std::vector<float>{1, 0});

  // An additive float mask broadcast over rows, and an explicit scale.
  Owned additive = tensor({1, 2}, {0, -std::numeric_limits<float>::infinity()});
  double half = 0.5;
  Attention scaled = attend(q, k, v, false, additive, &half);
  check_values(values<float>(scaled.out), std::vector<float>{10, 10});
  check_values(values<float>(scaled.lse), std::vector<float>{0.5f, 1.0f});
  Attention scaled_only = attend(q, k, v, false, nullptr, &half);
  const double r = std::exp(0.5);
  check_values(values<float>(scaled_only.out),
               std::vector<float>{static_cast<float>((10 * r + 20) / (r + 1)),
                                  static_cast<float>((10 * e + 20) / (e + 1))});
}

TEST(ops, attention_writes_only_the_outputs_asked_for) {
  // A blob passes nullptr for an output it never reads (torchgen's ret_pointer_can_be_null
  // ops): libtorch's shim accepts that, so these must too, and still compute the rest.
  Owned q = tensor({1, 1, 2, 1}, {1, 2});
  Owned k = tensor({1, 1, 2, 1}, {1, 0});
  Owned v = tensor({1, 1, 2, 1}, {10, 20});
  Attention all = attend(q, k, v, false, nullptr, nullptr);
  Owned out;
  CHECK_OK(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, 0, nullptr, nullptr, out.out(),
                                                                       nullptr));
  check_values(values<float>(out), values<float>(all.out));
  CHECK_OK(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, 0, nullptr, nullptr, nullptr,
                                                                       nullptr));
}

TEST(ops, attention_layouts_and_bad_input) {
  // A query stored as [B, L, H, E] (as a transposed projection would be): the output keeps that layout.
  const int64_t b = 1, h = 2, l = 3, e = 2;
  std::vector<float> qv(b * h * l * e), kv(qv.size()), vv(qv.size());
  for (size_t i = 0; i < qv.size(); ++i) {
    qv[i] = 0.1f * static_cast<float>(i);
    kv[i] = 0.2f * static_cast<float>(i % 5);
    vv[i] = static_cast<float>(i);
  }
  std::vector<int64_t> blhe = {l * h * e, e, h * e, 1};
  Owned q = tensor({b, h, l, e}, qv, blhe);
  Owned k = tensor({b, h, l, e}, kv);
  Owned v = tensor({b, h, l, e}, vv);
  Attention a = attend(q, k, v, false, nullptr, nullptr);
  CHECK_EQ(strides_of(a.out), blhe);
  // Head 1, query 2, against a direct softmax.
  const int64_t hh = 1, qq = 2;
  double scores[3], total = 0, m = -1e30;
  for (int64_t s = 0; s < l; ++s) {
    double dot = 0;
    for (int64_t i = 0; i < e; ++i) dot += qv[(hh * l + qq) * e + i] * kv[(hh * l + s) * e + i];
    scores[s] = dot / std::sqrt(2.0);
    m = std::max(m, scores[s]);
  }
  double out0 = 0;
  for (int64_t s = 0; s < l; ++s) {
    total += std::exp(scores[s] - m);
    out0 += std::exp(scores[s] - m) * vv[(hh * l + s) * e + 0];
  }
  std::vector<float> got = values<float>(a.out);
  CHECK_NEAR(got[(hh * l + qq) * e + 0], out0 / total, 1e-4);

  AtenTensorHandle r0 = sentinel(), r1 = sentinel();
  CHECK_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.1, 0, nullptr, nullptr, &r0, &r1),
           AOTI_SHIM_E_UNSUPPORTED);
  Owned short_v = tensor({b, h, l - 1, e}, std::vector<float>(b * h * (l - 1) * e, 1));
  CHECK_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, short_v, 0, 0, nullptr, nullptr, &r0, &r1),
           AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned flat = tensor({6}, {1, 2, 3, 4, 5, 6});
  CHECK_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(flat, k, v, 0, 0, nullptr, nullptr, &r0, &r1),
           AOTI_SHIM_E_RANK_MISMATCH);
  Owned bad_mask = tensor({2, 2}, {0, 0, 0, 0});
  AtenTensorHandle mask_handle = bad_mask;
  CHECK_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, v, 0, 0, &mask_handle, nullptr, &r0, &r1),
           AOTI_SHIM_E_SHAPE_MISMATCH);
  Owned int_mask = empty({3, 3}, {}, 3);
  mask_handle = int_mask;
  CHECK_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, v, 0, 0, &mask_handle, nullptr, &r0, &r1),
           AOTI_SHIM_E_DTYPE_MISMATCH);
  CHECK(r0 == sentinel());
  CHECK(r1 == sentinel());
}
