// cuBLAS (loaded at first use, ops_cuda_blas.cpp) for the shims' other CUDA ops.
#pragma once

#include "aoti_shim/shim.h"

#include <cstdint>

namespace aotishim::blas {

// AOTI_SHIM_OK when cuBLAS is loaded (loading it on first call), else its one-line reason.
AOTITorchError available();

// cublasGemmStridedBatchedEx in cuBLAS's column-major terms, on `stream` of `device`
// (which must be current): C = alpha * op(A) @ op(B) + beta * C for `batch` matrices.
// Operands are c10 dtypes float32 (6), float16 (5) or bfloat16 (15); the sum is float32
// (TF32 only under TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, for all-float32 operands).
AOTITorchError gemm_strided_batched(
    int32_t device, void* stream, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
    const void* a, int32_t a_dtype, int64_t lda, int64_t stride_a, const void* b, int32_t b_dtype, int64_t ldb,
    int64_t stride_b, float beta, void* c, int32_t c_dtype, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace aotishim::blas
