# AotiShimCudaWheels: CMake's CUDA language from NVIDIA's pip wheels, no CUDA toolkit.
#
# nvidia-cuda-nvcc and nvidia-nvvm (nvcc, ptxas, cicc) with nvidia-cuda-runtime and
# nvidia-cuda-crt (headers, libcudart) 13.0, installed into a Python, compile and link
# .cu files. This file points CMake at them. It must run before the project() or
# enable_language(CUDA) that turns CUDA on, because CMake picks its CUDA compiler then:
#
#   # plain CMake, no change to the project (CMake 3.24+):
#   cmake -S . -B build -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$(python -m aoti_shim --cmake-dir)/AotiShimCudaWheels.cmake"
#   # or in CMakeLists.txt, before project(x LANGUAGES CXX CUDA):
#   list(APPEND CMAKE_MODULE_PATH "<aoti-shim cmake dir>")   # scikit-build-core does this itself
#   include(AotiShimCudaWheels)
#
# The pip backend (aoti_shim.build) does the first for [tool.aoti-shim] cuda = true.
#
# A compiler the user chose wins: with CMAKE_CUDA_COMPILER or the CUDACXX environment
# variable set, this file changes no compiler setting. Otherwise it looks for the wheels'
# nvidia/cu13 folder: AOTI_SHIM_CUDA_WHEELS_ROOT when set, else asks a Python
# (AOTI_SHIM_PYTHON, Python_EXECUTABLE, Python3_EXECUTABLE, the Python aoti-shim is
# installed in, python3 on PATH). When found it sets, as cache entries:
#   CMAKE_CUDA_COMPILER   <root>/bin/nvcc
#   CUDAToolkit_ROOT      <root>                  (find_package(CUDAToolkit) and CMake's CUDA detection)
#   CUDA_CUDART, CUDA_cudart_LIBRARY  <root>/lib/libcudart.so.13 (the wheel has no libcudart.so link)
# and appends -L<root>/lib to CMAKE_CUDA_FLAGS in the including scope: nvcc.profile
# looks for libcudart_static.a and libcudadevrt.a in lib64, the wheels put them in lib.
#
# In every case, CMAKE_CUDA_ARCHITECTURES defaults to AOTI_SHIM_CUDA_DEFAULT_ARCHITECTURES
# ("90": sm_90 code for the H100/H200 plus compute_90 PTX that newer GPUs JIT-compile),
# unless the user set CMAKE_CUDA_ARCHITECTURES or the CUDAARCHS environment variable.
#
# Results: AOTI_SHIM_CUDA_WHEELS_FOUND (TRUE/FALSE), AOTI_SHIM_CUDA_WHEELS_ROOT.
# With AOTI_SHIM_CUDA_WHEELS_REQUIRED true, not finding the wheels is a fatal error.
#
# Like CMake's own Find modules this runs in the includer's scope (it sets variables
# there); its helper functions are prefixed _aoti_shim_cuda_wheels_.

set(AOTI_SHIM_CUDA_DEFAULT_ARCHITECTURES "90" CACHE STRING
  "CMAKE_CUDA_ARCHITECTURES when neither it nor CUDAARCHS is set (90: sm_90 code + compute_90 PTX)")
set(AOTI_SHIM_CUDA_WHEELS_ROOT "" CACHE PATH
  "The nvidia/cu13 folder of the nvidia-cuda-nvcc wheels (empty: ask the build's Python)")

# _aoti_shim_find_python: the Python to ask for the wheels (AotiShim's own lookup).
include("${CMAKE_CURRENT_LIST_DIR}/AotiShimPython.cmake")

# The nvidia/cu13 folder holding bin/nvcc in <python>'s packages, or "".
function(_aoti_shim_cuda_wheels_ask python out)
  # nvidia is a namespace package spread over several folders: look in each.
  execute_process(
    COMMAND "${python}" -c "import nvidia, os; print(next((os.path.join(p, 'cu13') for p in nvidia.__path__ if os.path.isfile(os.path.join(p, 'cu13', 'bin', 'nvcc'))), ''))"
    OUTPUT_VARIABLE root OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    set(root "")
  endif()
  set(${out} "${root}" PARENT_SCOPE)
endfunction()

# A one-line reason why <root> cannot build CUDA code, or "" when it can.
function(_aoti_shim_cuda_wheels_missing root out)
  set(reason "")
  foreach(pair IN ITEMS
      "bin/nvcc|nvidia-cuda-nvcc" "nvvm/bin/cicc|nvidia-nvvm" "include/cuda_runtime.h|nvidia-cuda-runtime"
      "lib/libcudart.so.13|nvidia-cuda-runtime" "lib/libcudart_static.a|nvidia-cuda-runtime"
      "include/crt/host_defines.h|nvidia-cuda-crt")
    string(REPLACE "|" ";" pair "${pair}")
    list(GET pair 0 file)
    list(GET pair 1 wheel)
    if(NOT EXISTS "${root}/${file}")
      set(reason "${root}/${file} is missing (install ${wheel}==13.0.*)")
      break()
    endif()
  endforeach()
  set(${out} "${reason}" PARENT_SCOPE)
endfunction()

set(AOTI_SHIM_CUDA_WHEELS_FOUND FALSE)
# Was the compiler set by an earlier run of this file (a re-configure), or by the user?
set(_aoti_shim_cuda_ours FALSE)
if(DEFINED CACHE{_AOTI_SHIM_CUDA_WHEELS_NVCC} AND "${CMAKE_CUDA_COMPILER}" STREQUAL "${_AOTI_SHIM_CUDA_WHEELS_NVCC}")
  set(_aoti_shim_cuda_ours TRUE)
elseif(NOT AOTI_SHIM_CUDA_WHEELS_ROOT AND "${CMAKE_CUDA_COMPILER}" MATCHES "^(.*/nvidia/cu13)/bin/nvcc$")
  # A chosen compiler that is itself a wheel's nvcc still needs the wheel layout's fixes.
  set(AOTI_SHIM_CUDA_WHEELS_ROOT "${CMAKE_MATCH_1}")
  set(_aoti_shim_cuda_ours TRUE)
endif()

if(NOT _aoti_shim_cuda_ours AND (CMAKE_CUDA_COMPILER OR NOT "$ENV{CUDACXX}" STREQUAL ""))
  if(CMAKE_CUDA_COMPILER)
    set(_aoti_shim_cuda_chosen "${CMAKE_CUDA_COMPILER}")
  else()
    set(_aoti_shim_cuda_chosen "$ENV{CUDACXX} (CUDACXX)")
  endif()
  message(STATUS "AotiShimCudaWheels: using the chosen CUDA compiler ${_aoti_shim_cuda_chosen}, not the nvcc wheels")
  unset(_aoti_shim_cuda_chosen)
else()
  set(_aoti_shim_cuda_root "${AOTI_SHIM_CUDA_WHEELS_ROOT}")
  set(_aoti_shim_cuda_from "AOTI_SHIM_CUDA_WHEELS_ROOT")
  if(NOT _aoti_shim_cuda_root)
    _aoti_shim_find_python(_aoti_shim_cuda_python)
    if(_aoti_shim_cuda_python)
      _aoti_shim_cuda_wheels_ask("${_aoti_shim_cuda_python}" _aoti_shim_cuda_root)
      set(_aoti_shim_cuda_from "${_aoti_shim_cuda_python}")
    else()
      set(_aoti_shim_cuda_from "no Python found")
    endif()
    unset(_aoti_shim_cuda_python)
  endif()
  set(_aoti_shim_cuda_why "")
  if(NOT _aoti_shim_cuda_root)
    set(_aoti_shim_cuda_why "no nvidia/cu13/bin/nvcc in the Python packages of ${_aoti_shim_cuda_from} "
                            "(pip install nvidia-cuda-nvcc==13.0.* nvidia-nvvm==13.0.* nvidia-cuda-runtime==13.0.* "
                            "nvidia-cuda-crt==13.0.*, or set -DAOTI_SHIM_CUDA_WHEELS_ROOT=<.../nvidia/cu13>)")
    string(CONCAT _aoti_shim_cuda_why ${_aoti_shim_cuda_why})
  else()
    get_filename_component(_aoti_shim_cuda_root "${_aoti_shim_cuda_root}" ABSOLUTE)
    _aoti_shim_cuda_wheels_missing("${_aoti_shim_cuda_root}" _aoti_shim_cuda_why)
  endif()
  if(_aoti_shim_cuda_why)
    if(AOTI_SHIM_CUDA_WHEELS_REQUIRED)
      message(FATAL_ERROR "AotiShimCudaWheels: ${_aoti_shim_cuda_why}")
    endif()
    message(STATUS "AotiShimCudaWheels: not used: ${_aoti_shim_cuda_why}")
  else()
    set(AOTI_SHIM_CUDA_WHEELS_FOUND TRUE)
    set(AOTI_SHIM_CUDA_WHEELS_ROOT "${_aoti_shim_cuda_root}" CACHE PATH
      "The nvidia/cu13 folder of the nvidia-cuda-nvcc wheels (empty: ask the build's Python)" FORCE)
    set(CMAKE_CUDA_COMPILER "${_aoti_shim_cuda_root}/bin/nvcc" CACHE FILEPATH "CUDA compiler (the nvcc wheel)" FORCE)
    set(_AOTI_SHIM_CUDA_WHEELS_NVCC "${CMAKE_CUDA_COMPILER}" CACHE INTERNAL "the nvcc AotiShimCudaWheels chose")
    set(CUDAToolkit_ROOT "${_aoti_shim_cuda_root}" CACHE PATH "CUDA toolkit root (the nvidia/cu13 wheels)")
    # FindCUDAToolkit looks for libcudart.so, which the wheel does not have.
    set(CUDA_CUDART "${_aoti_shim_cuda_root}/lib/libcudart.so.13" CACHE FILEPATH "CUDA runtime library")
    set(CUDA_cudart_LIBRARY "${_aoti_shim_cuda_root}/lib/libcudart.so.13" CACHE FILEPATH "CUDA runtime library")
    # Needed by CMake's compiler detection (it links a test program) and by nvcc-driven links.
    # (A plain search, not MATCHES: the path may hold regex characters such as '+'.)
    string(FIND " ${CMAKE_CUDA_FLAGS} " " -L${_aoti_shim_cuda_root}/lib " _aoti_shim_cuda_at)
    if(_aoti_shim_cuda_at EQUAL -1)
      string(STRIP "${CMAKE_CUDA_FLAGS} -L${_aoti_shim_cuda_root}/lib" CMAKE_CUDA_FLAGS)
    endif()
    unset(_aoti_shim_cuda_at)
    message(STATUS "AotiShimCudaWheels: CUDA from the wheels in ${_aoti_shim_cuda_root}")
  endif()
  unset(_aoti_shim_cuda_root)
  unset(_aoti_shim_cuda_from)
  unset(_aoti_shim_cuda_why)
endif()
unset(_aoti_shim_cuda_ours)

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES "${AOTI_SHIM_CUDA_DEFAULT_ARCHITECTURES}" CACHE STRING
    "CUDA architectures (default from AOTI_SHIM_CUDA_DEFAULT_ARCHITECTURES)")
endif()
