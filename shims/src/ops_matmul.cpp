// CPU matrix products: addmm_out, mm_out, bmm_out (float32, float64; any strides).
#include "ops.h"

#include <vector>

namespace aotishim {

namespace {

// Register tiles of MR rows by NR columns; NR spans 64 bytes so the compiler keeps
// the accumulators in vector registers (two AVX2 registers per row for float).
constexpr int64_t kRows = 4;

template <typename T>
constexpr int64_t kCols = 64 / static_cast<int64_t>(sizeof(T));

// B packed into column panels of kCols: panel p holds B[:, p*kCols .. +kCols] row by
// row, zero-padded past n, so the inner loop reads contiguous memory.
template <typename T>
std::vector<T> pack_panels(const GemmArgs<T>& g) {
  constexpr int64_t nr = kCols<T>;
  int64_t panels = (g.n + nr - 1) / nr;
  std::vector<T> packed(static_cast<size_t>(panels * g.k * nr), T(0));
  for (int64_t p = 0; p < panels; ++p) {
    T* panel = packed.data() + p * g.k * nr;
    int64_t width = std::min(nr, g.n - p * nr);
    for (int64_t kk = 0; kk < g.k; ++kk) {
      const T* row = g.b + kk * g.b_s0 + p * nr * g.b_s1;
      for (int64_t j = 0; j < width; ++j) {
        panel[kk * nr + j] = row[j * g.b_s1];
      }
    }
  }
  return packed;
}

template <typename T>
inline __attribute__((always_inline)) void gemm_body(const GemmArgs<T>& g) {
  constexpr int64_t nr = kCols<T>;
  std::vector<T> packed = pack_panels(g);
  int64_t panels = (g.n + nr - 1) / nr;
  for (int64_t i0 = 0; i0 < g.m; i0 += kRows) {
    int64_t rows = std::min(kRows, g.m - i0);
    // Rows past m repeat the last row; their results are never written.
    const T* a_rows[kRows];
    for (int64_t r = 0; r < kRows; ++r) {
      a_rows[r] = g.a + (i0 + std::min(r, rows - 1)) * g.a_s0;
    }
    for (int64_t p = 0; p < panels; ++p) {
      const T* panel = packed.data() + p * g.k * nr;
      T acc[kRows][nr] = {};
      for (int64_t kk = 0; kk < g.k; ++kk) {
        const T* b_row = panel + kk * nr;
        for (int64_t r = 0; r < kRows; ++r) {
          T a_value = a_rows[r][kk * g.a_s1];
          for (int64_t j = 0; j < nr; ++j) {
            acc[r][j] += a_value * b_row[j];
          }
        }
      }
      int64_t width = std::min(nr, g.n - p * nr);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = i0 + r;
        T* c_row = g.c + i * g.c_s0 + p * nr * g.c_s1;
        const T* bias_row = g.bias ? g.bias + i * g.bias_s0 + p * nr * g.bias_s1 : nullptr;
        for (int64_t j = 0; j < width; ++j) {
          T value = g.alpha * acc[r][j];
          // beta == 0 ignores the bias entirely (NaN and inf included), as torch does.
          if (bias_row != nullptr && g.beta != T(0)) {
            value += g.beta * bias_row[j * g.bias_s1];
          }
          c_row[j * g.c_s1] = value;
        }
      }
    }
  }
}

// One build per instruction set, picked at load time (GCC function multi-versioning):
// the wheel targets baseline x86-64, the machines running it mostly have AVX2 and FMA.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AOTISHIM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define AOTISHIM_CLONES
#endif

AOTISHIM_CLONES void gemm_float(const GemmArgs<float>& g) { gemm_body(g); }
AOTISHIM_CLONES void gemm_double(const GemmArgs<double>& g) { gemm_body(g); }

}  // namespace

template <>
void gemm<float>(const GemmArgs<float>& g) {
  if (g.m > 0 && g.n > 0) {
    gemm_float(g);
  }
}

template <>
void gemm<double>(const GemmArgs<double>& g) {
  if (g.m > 0 && g.n > 0) {
    gemm_double(g);
  }
}

namespace {

AOTITorchError check_matrix(const Tensor& t, const char* what) {
  if (t.dim() != 2) {
    return fail_format(
        AOTI_SHIM_E_RANK_MISMATCH, "%s must be 2-dim, it has %lld dims", what, static_cast<long long>(t.dim()));
  }
  return AOTI_SHIM_OK;
}

// out[m,n] = beta * bias + alpha * a[m,k] @ b[k,n]; bias (optional) broadcasts to [m,n].
AOTITorchError matmul_into(
    const Tensor& out, const Tensor* bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
  AOTISHIM_TRY(check_matrix(a, "mat1"));
  AOTISHIM_TRY(check_matrix(b, "mat2"));
  AOTISHIM_TRY(check_matrix(out, "out"));
  const Tensor* operands[] = {&out, &a, &b, bias};
  AOTISHIM_TRY(check_cpu_float(operands, 4));
  int64_t m = a.sizes[0];
  int64_t k = a.sizes[1];
  int64_t n = b.sizes[1];
  if (b.sizes[0] != k) {
    return fail_format(
        AOTI_SHIM_E_SHAPE_MISMATCH, "mat1 [%lld, %lld] and mat2 [%lld, %lld] cannot be multiplied",
        static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(b.sizes[0]),
        static_cast<long long>(n));
  }
  if (out.sizes[0] != m || out.sizes[1] != n) {
    return fail_format(
        AOTI_SHIM_E_SHAPE_MISMATCH, "out is [%lld, %lld], the product is [%lld, %lld]",
        static_cast<long long>(out.sizes[0]), static_cast<long long>(out.sizes[1]), static_cast<long long>(m),
        static_cast<long long>(n));
  }
  int64_t bias_s0 = 0;
  int64_t bias_s1 = 0;
  if (bias != nullptr) {
    // Broadcast the bias like torch: up to 2 dims, each of the matching size or 1.
    if (bias->dim() > 2) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "self must have at most 2 dims for addmm");
    }
    int64_t rows = bias->dim() == 2 ? bias->sizes[0] : 1;
    int64_t cols = bias->dim() >= 1 ? bias->sizes[bias->dim() - 1] : 1;
    if ((rows != m && rows != 1) || (cols != n && cols != 1)) {
      return fail_format(
          AOTI_SHIM_E_SHAPE_MISMATCH, "self [%lld, %lld] does not broadcast to [%lld, %lld]",
          static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(m),
          static_cast<long long>(n));
    }
    bias_s0 = (bias->dim() == 2 && rows != 1) ? bias->strides[0] : 0;
    bias_s1 = (bias->dim() >= 1 && cols != 1) ? bias->strides[bias->dim() - 1] : 0;
  }
  dispatch_float(out.dtype, [&](auto zero) {
    using T = decltype(zero);
    GemmArgs<T> g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = reinterpret_cast<const T*>(a.data());
    g.a_s0 = a.strides[0];
    g.a_s1 = a.strides[1];
    g.b = reinterpret_cast<const T*>(b.data());
    g.b_s0 = b.strides[0];
    g.b_s1 = b.strides[1];
    g.c = reinterpret_cast<T*>(out.data());
    g.c_s0 = out.strides[0];
    g.c_s1 = out.strides[1];
    g.bias = bias ? reinterpret_cast<const T*>(bias->data()) : nullptr;
    g.bias_s0 = bias_s0;
    g.bias_s1 = bias_s1;
    g.alpha = static_cast<T>(alpha);
    g.beta = static_cast<T>(beta);
    gemm(g);
  });
  return AOTI_SHIM_OK;
}

}  // namespace

AOTITorchError check_cpu_float(const Tensor* const* operands, size_t count) {
  int32_t dtype = -1;
  for (size_t i = 0; i < count; ++i) {
    const Tensor* t = operands[i];
    if (t == nullptr) {
      continue;
    }
    if (t->device_type() != kCPU) {
      return fail_format(AOTI_SHIM_E_DEVICE_MISMATCH, "operand %zu is not a CPU tensor", i);
    }
    if (t->dtype != 6 && t->dtype != 7) {
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "operand %zu is %s: only float32 and float64 are supported", i,
          dtype_name(t->dtype));
    }
    if (dtype >= 0 && t->dtype != dtype) {
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "operand %zu is %s, operand 0 is %s", i, dtype_name(t->dtype),
          dtype_name(dtype));
    }
    dtype = t->dtype;
  }
  return AOTI_SHIM_OK;
}

}  // namespace aotishim

using namespace aotishim;

extern "C" {

AOTITorchError aoti_torch_cpu_addmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
    double alpha) {
  return guarded("aoti_torch_cpu_addmm_out", [&]() -> AOTITorchError {
    Tensor *o = nullptr, *s = nullptr, *a = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(out, &o, "out"));
    AOTISHIM_TRY(unwrap(self, &s, "self"));
    AOTISHIM_TRY(unwrap(mat1, &a, "mat1"));
    AOTISHIM_TRY(unwrap(mat2, &b, "mat2"));
    return matmul_into(*o, s, *a, *b, beta, alpha);
  });
}

AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  return guarded("aoti_torch_cpu_mm_out", [&]() -> AOTITorchError {
    Tensor *o = nullptr, *a = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(out, &o, "out"));
    AOTISHIM_TRY(unwrap(self, &a, "self"));
    AOTISHIM_TRY(unwrap(mat2, &b, "mat2"));
    return matmul_into(*o, nullptr, *a, *b, 0.0, 1.0);
  });
}

AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  return guarded("aoti_torch_cpu_bmm_out", [&]() -> AOTITorchError {
    Tensor *o = nullptr, *a = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(out, &o, "out"));
    AOTISHIM_TRY(unwrap(self, &a, "self"));
    AOTISHIM_TRY(unwrap(mat2, &b, "mat2"));
    if (o->dim() != 3 || a->dim() != 3 || b->dim() != 3) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "bmm operands must be 3-dim");
    }
    int64_t batch = a->sizes[0];
    if (b->sizes[0] != batch || o->sizes[0] != batch) {
      return fail_format(AOTI_SHIM_E_SHAPE_MISMATCH, "bmm batch sizes differ");
    }
    // Each batch is a 2-dim view of the same storages.
    auto slice = [](const Tensor& t, int64_t i) {
      Tensor view;
      view.magic = 0;  // never handed out
      view.storage = t.storage;
      view.sizes = {t.sizes[1], t.sizes[2]};
      view.strides = {t.strides[1], t.strides[2]};
      view.storage_offset = t.storage_offset + i * t.strides[0];
      view.dtype = t.dtype;
      return view;
    };
    if (batch == 0) {
      const Tensor* operands[] = {o, a, b};
      return check_cpu_float(operands, 3);
    }
    for (int64_t i = 0; i < batch; ++i) {
      AOTISHIM_TRY(matmul_into(slice(*o, i), nullptr, slice(*a, i), slice(*b, i), 0.0, 1.0));
    }
    return AOTI_SHIM_OK;
  });
}

}  // extern "C"
