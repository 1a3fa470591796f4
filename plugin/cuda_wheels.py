"""NVIDIA's CUDA 13.0 wheels a build may add: data only, read by the settings and by plugin/cuda.py.

Apart from cuda.py so that plugin/settings.py can name the known cuda-libraries without
importing the module that imports it (they were a function-level import cycle).
"""

from __future__ import annotations

# One CUDA line for all of them: the runtime's 13.0 (libcudart.so.13), which aoti-shim depends on.
CUDA_WHEELS: tuple[str, ...] = (
    "nvidia-cuda-nvcc==13.0.*",  # nvcc, ptxas, fatbinary, nvlink
    "nvidia-nvvm==13.0.*",  # cicc, libdevice
    "nvidia-cuda-runtime==13.0.*",  # cuda_runtime.h, libcudart.so.13, libcudart_static.a, libcudadevrt.a
    "nvidia-cuda-crt==13.0.*",  # crt/host_defines.h and the other crt/ headers
    "nvidia-cuda-cccl==13.0.*",  # include/cccl: nvcc and CMake 4's FindCUDAToolkit put it on the include path
)
# [tool.aoti-shim] cuda-libraries: NVIDIA's library wheels of the same CUDA 13.0 line, for .cu and
# .cpp files that include their headers (curand_kernel.h, cublas_v2.h); the headers land in the
# same nvidia/cu13/include folder as the runtime's, which nvcc and CUDAToolkit_ROOT already use.
CUDA_LIBRARY_WHEELS: dict[str, str] = {
    "curand": "nvidia-curand==10.4.0.*",  # curand.h, curand_kernel.h, libcurand.so.10 (CUDA 13.0's cuRAND)
    "cublas": "nvidia-cublas==13.0.*",  # cublas_v2.h, cublasLt.h, libcublas.so.13
}
