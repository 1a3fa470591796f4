// CUDA matrix products through cuBLAS: mm_out, addmm_out, bmm_out, baddbmm_out in
// float32, float64, float16 and bfloat16. The fallbacks an Inductor compile without
// autotuning leaves (ATen's GEMMs).
//
// cuBLAS is loaded at the first call with dlopen (libcublas.so.13 from the
// nvidia-cublas wheel that torch's CUDA wheels install, found through this library's
// RUNPATH, or the copy torch already loaded), so building the shims needs no cuBLAS and
// a process that never calls these ops never loads it. AOTI_SHIM_CUBLAS names another
// file.
//
// Precision follows torch's defaults: float32 without TF32 (torch's "highest"
// float32 matmul precision) unless TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, as in torch;
// float16 and bfloat16 accumulate in float32.
#include "blas.h"
#include "cuda_api.h"
#include "tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#if AOTI_SHIM_WITH_CUDA
#include "nvidia_library.h"

#include <mutex>
#include <string>
#endif

namespace aotishim {

namespace {

// The few cuBLAS declarations used here, with the values of cublas_api.h and
// library_types.h (CUDA 12 and 13 agree on them): no cuBLAS header at build time.
using CublasHandle = void*;
using CublasStatus = int;
constexpr int kOpN = 0;              // CUBLAS_OP_N
constexpr int kOpT = 1;              // CUBLAS_OP_T
constexpr int kR32F = 0;             // CUDA_R_32F
constexpr int kR64F = 1;             // CUDA_R_64F
constexpr int kR16F = 2;             // CUDA_R_16F
constexpr int kR16BF = 14;           // CUDA_R_16BF
constexpr int kCompute32F = 68;      // CUBLAS_COMPUTE_32F
constexpr int kCompute32FTF32 = 77;  // CUBLAS_COMPUTE_32F_FAST_TF32
constexpr int kCompute64F = 70;      // CUBLAS_COMPUTE_64F
constexpr int kGemmDefault = -1;     // CUBLAS_GEMM_DEFAULT

#if AOTI_SHIM_WITH_CUDA

struct Cublas {
  CublasStatus (*create)(CublasHandle*) = nullptr;
  CublasStatus (*set_stream)(CublasHandle, void*) = nullptr;
  CublasStatus (*gemm_strided_batched)(
      CublasHandle, int, int, int, int, int, const void*, const void*, int, int, long long, const void*, int, int,
      long long, const void*, void*, int, int, long long, int, int, int) = nullptr;
  const char* (*status_string)(CublasStatus) = nullptr;
  std::string error;  // why loading failed; empty when loaded
};

// Loaded once per process; the library stays loaded.
const Cublas& cublas() {
  static const Cublas loaded = [] {
    Cublas api;
    std::string tried;
    const char* loaded = nullptr;
    void* lib = open_library("AOTI_SHIM_CUBLAS", {"libcublas.so.13", "libcublas.so.12"}, &tried, &loaded);
    if (lib == nullptr) {
      api.error = "cuBLAS could not be loaded (" + tried +
                  "): install it with `pip install nvidia-cublas` (torch's CUDA wheels bring it), set "
                  "AOTI_SHIM_CUBLAS to libcublas.so, or compile with autotuning on (no ATen GEMM fallbacks)";
      return api;
    }
    auto sym = [&](const char* name) {
      void* p = dlsym(lib, name);
      if (p == nullptr && api.error.empty()) {
        api.error = std::string("cuBLAS lacks ") + name;
      }
      return p;
    };
    api.create = reinterpret_cast<decltype(api.create)>(sym("cublasCreate_v2"));
    api.set_stream = reinterpret_cast<decltype(api.set_stream)>(sym("cublasSetStream_v2"));
    api.gemm_strided_batched = reinterpret_cast<decltype(api.gemm_strided_batched)>(sym("cublasGemmStridedBatchedEx"));
    api.status_string = reinterpret_cast<decltype(api.status_string)>(dlsym(lib, "cublasGetStatusString"));
    return api;
  }();
  return loaded;
}

AOTITorchError check(CublasStatus status, const char* call) {
  if (status == 0) {
    return AOTI_SHIM_OK;
  }
  const char* text = cublas().status_string ? cublas().status_string(status) : "unknown status";
  return fail_format(AOTI_SHIM_E_CUDA_ERROR, "%s failed (%d: %s)", call, status, text);
}

// The calling thread's handle for the device, on `stream` (DeviceHandles); a cuBLAS that
// did not load is said here, with its fix, whichever op asked.
AOTITorchError handle_for(int32_t device, void* stream, CublasHandle* out) {
  const Cublas& api = cublas();
  if (!api.error.empty()) {
    return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s", api.error.c_str());
  }
  thread_local DeviceHandles<CublasHandle> handles;
  return handles.get(
      device, stream, [&](CublasHandle* h) { return check(api.create(h), "cublasCreate"); },
      [&](CublasHandle h, void* s) { return check(api.set_stream(h, s), "cublasSetStream"); }, out);
}

#endif  // AOTI_SHIM_WITH_CUDA

// A batch of row-major matrices: element [b][i][j] at b*batch_stride + i*rows_stride + j*cols_stride.
struct Batch {
  const Tensor* t = nullptr;
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
};

Batch describe(const Tensor& t) {
  Batch b;
  b.t = &t;
  int64_t d = t.dim();
  b.rows = t.sizes[d - 2];
  b.cols = t.sizes[d - 1];
  b.row_stride = t.strides[d - 2];
  b.col_stride = t.strides[d - 1];
  if (d == 3) {
    b.batch = t.sizes[0];
    b.batch_stride = t.sizes[0] == 1 ? 0 : t.strides[0];
  }
  // A dim of size 1 may have any stride: pick the one that makes the layout plain.
  if (b.rows == 1) {
    b.row_stride = std::max<int64_t>(b.cols, 1);
  }
  if (b.cols == 1) {
    b.col_stride = 1;
  }
  return b;
}

// How cuBLAS (column-major) sees the transpose of row-major matrix x: as x's storage
// read column-major, with op N (rows contiguous) or op T (columns contiguous).
// Unused in a build without CUDA, as contiguous_copy below.
[[maybe_unused]] bool as_cublas_transposed(const Batch& x, int* op, int64_t* ld) {
  if (x.col_stride == 1 && x.row_stride >= std::max<int64_t>(x.cols, 1)) {
    *op = 0;  // N: x^T is cols x rows column-major with leading dimension row_stride
    *ld = x.row_stride;
    return true;
  }
  if (x.row_stride == 1 && x.col_stride >= std::max<int64_t>(x.rows, 1)) {
    *op = 1;  // T: x is rows x cols column-major, transposed by cuBLAS
    *ld = x.col_stride;
    return true;
  }
  return false;
}

const char* kWhere = "cuBLAS GEMM";

[[maybe_unused]] AOTITorchError contiguous_copy(const Tensor& t, std::unique_ptr<Tensor>* out) {
  AOTISHIM_TRY(new_tensor(t.sizes, contiguous_strides(t.sizes), t.dtype, t.device_type(), t.device_index(), false, out));
  return copy_tensor(**out, t, true);
}

// out = beta * bias + alpha * a @ b, batched when the operands are 3-dim.
AOTITorchError gemm(const Tensor& out, const Tensor* bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
  int64_t rank = out.dim();
  if ((rank != 2 && rank != 3) || a.dim() != rank || b.dim() != rank) {
    return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "%s: operands must all be 2-dim or all 3-dim", kWhere);
  }
  for (const Tensor* t : {&out, &a, &b, bias}) {
    if (t == nullptr) {
      continue;
    }
    if (t->device_type() != kCUDA || t->device_index() != out.device_index()) {
      return fail_format(AOTI_SHIM_E_DEVICE_MISMATCH, "%s: every operand must be on the output's CUDA device", kWhere);
    }
    if (t->dtype != out.dtype) {
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "%s: operands are %s and %s", kWhere, dtype_name(out.dtype), dtype_name(t->dtype));
    }
  }
  int data_type = 0, compute = 0;
  switch (out.dtype) {
    case 6:
      data_type = kR32F;
      break;
    case 7:
      data_type = kR64F;
      break;
    case 5:
      data_type = kR16F;
      break;
    case 15:
      data_type = kR16BF;
      break;
    default:
      return fail_format(
          AOTI_SHIM_E_DTYPE_MISMATCH, "%s: %s is not supported (float32, float64, float16, bfloat16)", kWhere,
          dtype_name(out.dtype));
  }
  Batch A = describe(a), B = describe(b), C = describe(out);
  if (A.cols != B.rows || C.rows != A.rows || C.cols != B.cols || (rank == 3 && (A.batch != C.batch || B.batch != C.batch))) {
    return fail_format(
        AOTI_SHIM_E_SHAPE_MISMATCH, "%s: [%lld, %lld] @ [%lld, %lld] into [%lld, %lld] (batches %lld, %lld, %lld)", kWhere,
        static_cast<long long>(A.rows), static_cast<long long>(A.cols), static_cast<long long>(B.rows),
        static_cast<long long>(B.cols), static_cast<long long>(C.rows), static_cast<long long>(C.cols),
        static_cast<long long>(A.batch), static_cast<long long>(B.batch), static_cast<long long>(C.batch));
  }
#if AOTI_SHIM_WITH_CUDA
  compute = out.dtype == 7 ? kCompute64F : (out.dtype == 6 && allow_tf32() ? kCompute32FTF32 : kCompute32F);
  if (C.rows == 0 || C.cols == 0 || C.batch == 0) {
    return AOTI_SHIM_OK;
  }
  // The result is written row-major into a plain buffer: the output itself when its
  // rows are contiguous and batches do not overlap, else a contiguous scratch copied back.
  std::unique_ptr<Tensor> scratch;
  const Tensor* target = &out;
  bool plain_out = C.col_stride == 1 && C.row_stride >= C.cols && (C.batch == 1 || C.batch_stride >= C.rows * C.row_stride);
  if (!plain_out) {
    AOTISHIM_TRY(new_tensor(out.sizes, contiguous_strides(out.sizes), out.dtype, kCUDA, out.device_index(), false, &scratch));
    target = scratch.get();
  }
  bool use_bias = bias != nullptr && beta != 0.0;
  if (use_bias) {
    // beta * bias enters as cuBLAS's C operand: broadcast it into the target first.
    AOTISHIM_TRY(copy_tensor(*target, *bias, true));
  } else {
    beta = 0.0;  // as torch: beta == 0 ignores the bias, NaN and inf included
  }
  // Operands cuBLAS cannot read in place (no unit stride) are made contiguous.
  std::unique_ptr<Tensor> a_copy, b_copy;
  int op_a = 0, op_b = 0;
  int64_t ld_a = 0, ld_b = 0;
  if (!as_cublas_transposed(A, &op_a, &ld_a)) {
    AOTISHIM_TRY(contiguous_copy(a, &a_copy));
    A = describe(*a_copy);
    as_cublas_transposed(A, &op_a, &ld_a);
  }
  if (!as_cublas_transposed(B, &op_b, &ld_b)) {
    AOTISHIM_TRY(contiguous_copy(b, &b_copy));
    B = describe(*b_copy);
    as_cublas_transposed(B, &op_b, &ld_b);
  }
  Batch T = describe(*target);
  int32_t device = out.device_index();
  cuda::DeviceScope scope;
  AOTISHIM_TRY(scope.enter(device));
  void* stream = current_stream(device);
  CublasHandle handle = nullptr;
  AOTISHIM_TRY(handle_for(device, stream, &handle));
  // Row-major C = A @ B is column-major C^T = B^T @ A^T: cuBLAS gets (B^T, A^T) with
  // m = C's columns, n = C's rows.
  float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
  const void* alpha_p = out.dtype == 7 ? static_cast<const void*>(&alpha) : &alpha32;
  const void* beta_p = out.dtype == 7 ? static_cast<const void*>(&beta) : &beta32;
  const char* a_data = (a_copy ? a_copy.get() : &a)->data();
  const char* b_data = (b_copy ? b_copy.get() : &b)->data();
  AOTISHIM_TRY(check(
      cublas().gemm_strided_batched(
          handle, op_b == 0 ? kOpN : kOpT, op_a == 0 ? kOpN : kOpT, static_cast<int>(C.cols), static_cast<int>(C.rows),
          static_cast<int>(A.cols), alpha_p, b_data, data_type, static_cast<int>(ld_b), B.batch_stride, a_data,
          data_type, static_cast<int>(ld_a), A.batch_stride, beta_p, target->data(), data_type,
          static_cast<int>(T.row_stride), T.batch == 1 ? 0 : T.batch_stride, static_cast<int>(C.batch), compute,
          kGemmDefault),
      "cublasGemmStridedBatchedEx"));
  if (scratch) {
    AOTISHIM_TRY(copy_tensor(out, *scratch, true));
  }
  // Copies made for this call die here: wait until cuBLAS has read them.
  if (a_copy || b_copy || scratch) {
    AOTISHIM_TRY(cuda::synchronize(stream));
  }
  return AOTI_SHIM_OK;
#else
  (void)compute;
  (void)data_type;
  (void)beta;
  (void)alpha;
  return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s: the shims were built without CUDA", kWhere);
#endif
}

}  // namespace

namespace blas {

AOTITorchError available() {
#if AOTI_SHIM_WITH_CUDA
  if (!cublas().error.empty()) {
    return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "%s", cublas().error.c_str());
  }
  return AOTI_SHIM_OK;
#else
  return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "cuBLAS: the shims were built without CUDA");
#endif
}

AOTITorchError gemm_strided_batched(
    int32_t device, void* stream, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
    const void* a, int32_t a_dtype, int64_t lda, int64_t stride_a, const void* b, int32_t b_dtype, int64_t ldb,
    int64_t stride_b, float beta, void* c, int32_t c_dtype, int64_t ldc, int64_t stride_c, int64_t batch) {
#if AOTI_SHIM_WITH_CUDA
  auto type_of = [](int32_t dtype, int* out) {
    switch (dtype) {
      case 6: *out = kR32F; return true;
      case 5: *out = kR16F; return true;
      case 15: *out = kR16BF; return true;
      default: return false;
    }
  };
  int ta = 0, tb = 0, tc = 0;
  if (!type_of(a_dtype, &ta) || !type_of(b_dtype, &tb) || !type_of(c_dtype, &tc)) {
    return fail_format(AOTI_SHIM_E_DTYPE_MISMATCH, "cuBLAS GEMM: float32, float16 or bfloat16 operands only");
  }
  const int64_t limit = 2147483647;
  for (int64_t v : {m, n, k, lda, ldb, ldc, batch}) {
    if (v > limit) {
      return fail_format(AOTI_SHIM_E_UNSUPPORTED, "cuBLAS GEMM: a size of %lld does not fit an int", static_cast<long long>(v));
    }
  }
  bool all_f32 = a_dtype == 6 && b_dtype == 6 && c_dtype == 6;
  int compute = all_f32 && allow_tf32() ? kCompute32FTF32 : kCompute32F;
  CublasHandle handle = nullptr;
  AOTISHIM_TRY(handle_for(device, stream, &handle));
  return check(
      cublas().gemm_strided_batched(
          handle, trans_a ? kOpT : kOpN, trans_b ? kOpT : kOpN, static_cast<int>(m), static_cast<int>(n),
          static_cast<int>(k), &alpha, a, ta, static_cast<int>(lda), stride_a, b, tb, static_cast<int>(ldb), stride_b,
          &beta, c, tc, static_cast<int>(ldc), stride_c, static_cast<int>(batch), compute, kGemmDefault),
      "cublasGemmStridedBatchedEx");
#else
  (void)device, (void)stream, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a;
  (void)a_dtype, (void)lda, (void)stride_a, (void)b, (void)b_dtype, (void)ldb, (void)stride_b, (void)beta, (void)c;
  (void)c_dtype, (void)ldc, (void)stride_c, (void)batch;
  return fail_format(AOTI_SHIM_E_CUDA_UNAVAILABLE, "cuBLAS GEMM: the shims were built without CUDA");
#endif
}

}  // namespace blas

}  // namespace aotishim

using namespace aotishim;

extern "C" {

AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  return guarded("aoti_torch_cuda_mm_out", [&]() -> AOTITorchError {
    Tensor *o = nullptr, *a = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(out, &o, "out"));
    AOTISHIM_TRY(unwrap(self, &a, "self"));
    AOTISHIM_TRY(unwrap(mat2, &b, "mat2"));
    if (o->dim() != 2) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "mm: operands must be 2-dim");
    }
    return gemm(*o, nullptr, *a, *b, 0.0, 1.0);
  });
}

AOTITorchError aoti_torch_cuda_addmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
    double alpha) {
  return guarded("aoti_torch_cuda_addmm_out", [&]() -> AOTITorchError {
    Tensor *o = nullptr, *s = nullptr, *a = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(out, &o, "out"));
    AOTISHIM_TRY(unwrap(self, &s, "self"));
    AOTISHIM_TRY(unwrap(mat1, &a, "mat1"));
    AOTISHIM_TRY(unwrap(mat2, &b, "mat2"));
    if (o->dim() != 2 || s->dim() > 2) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "addmm: out must be 2-dim and self at most 2-dim");
    }
    return gemm(*o, s, *a, *b, beta, alpha);
  });
}

AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  return guarded("aoti_torch_cuda_bmm_out", [&]() -> AOTITorchError {
    Tensor *o = nullptr, *a = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(out, &o, "out"));
    AOTISHIM_TRY(unwrap(self, &a, "self"));
    AOTISHIM_TRY(unwrap(mat2, &b, "mat2"));
    if (o->dim() != 3) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "bmm: operands must be 3-dim");
    }
    return gemm(*o, nullptr, *a, *b, 0.0, 1.0);
  });
}

AOTITorchError aoti_torch_cuda_baddbmm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1, AtenTensorHandle batch2, double beta,
    double alpha) {
  return guarded("aoti_torch_cuda_baddbmm_out", [&]() -> AOTITorchError {
    Tensor *o = nullptr, *s = nullptr, *a = nullptr, *b = nullptr;
    AOTISHIM_TRY(unwrap(out, &o, "out"));
    AOTISHIM_TRY(unwrap(self, &s, "self"));
    AOTISHIM_TRY(unwrap(batch1, &a, "batch1"));
    AOTISHIM_TRY(unwrap(batch2, &b, "batch2"));
    if (o->dim() != 3 || s->dim() > 3) {
      return fail_format(AOTI_SHIM_E_RANK_MISMATCH, "baddbmm: out must be 3-dim and self at most 3-dim");
    }
    return gemm(*o, s, *a, *b, beta, alpha);
  });
}

}  // extern "C"
