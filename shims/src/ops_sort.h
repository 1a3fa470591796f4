// A shim of the reference library's own, which torch's headers do not declare: a radix sort
// of 32-bit keys on the device, with CUB (ops_sort.cu). Runtimes add names like it (ExecuTorch's
// int4 matmuls); the library is built the way theirs are, with this folder as NAMES_FROM.
#pragma once

#include "aoti_shim/shim.h"

#ifdef __cplusplus
extern "C" {
#endif

// keys_out[0..count) = keys_in[0..count) sorted ascending, both device memory, on `stream`
// (null: the caller's stream selection, else the current stream). Built without CUDA:
// AOTI_SHIM_E_CUDA_UNAVAILABLE.
AOTI_SHIM_EXPORT AOTITorchError aoti_torch_cuda_radix_sort_u32(const uint32_t* keys_in, uint32_t* keys_out, int64_t count,
                                                               void* stream);

#ifdef __cplusplus
}
#endif

namespace aotishim::kernels {
// The CUB sort behind it (ops_sort.cu): 0 when sorted, else the CUDA status.
int radix_sort_u32(const uint32_t* keys_in, uint32_t* keys_out, int64_t count, void* stream);
}  // namespace aotishim::kernels
