# aoti_shim_find_cudart(<target-name>)
# Defines the imported target <target-name>: CUDA runtime headers and libcudart.so.13,
# from a CUDA 13 toolkit when one is found, else from the nvidia-cuda-runtime and
# nvidia-cuda-crt wheels of the Python running the build. Sets in the caller's scope:
#   AOTI_SHIM_CUDA_FOUND      TRUE/FALSE
#   AOTI_SHIM_CUDA_ORIGIN     "toolkit" or "wheel"
#   AOTI_SHIM_CUDA_LIB_DIR    folder holding libcudart.so.13
# AOTI_SHIM_CUDA_ROOT (a folder with include/ and lib/) overrides the search.
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/AotiShimPython.cmake")

function(_aoti_shim_wheel_cuda_root out_var)
  _aoti_shim_find_python(python)
  set(${out_var} "" PARENT_SCOPE)
  if(NOT python)
    return()
  endif()
  # nvidia is a namespace package: look for cu13 in each of its folders.
  execute_process(
    COMMAND "${python}" -c "import nvidia, os; print(next((os.path.join(p, 'cu13') for p in nvidia.__path__ if os.path.isfile(os.path.join(p, 'cu13', 'include', 'cuda_runtime_api.h'))), ''))"
    OUTPUT_VARIABLE root OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE status)
  if(status EQUAL 0 AND root)
    set(${out_var} "${root}" PARENT_SCOPE)
  endif()
endfunction()

function(aoti_shim_find_cudart target)
  if(TARGET "${target}")
    message(FATAL_ERROR "aoti_shim_find_cudart: target '${target}' already exists")
  endif()
  set(origin "")
  set(include_dir "")
  set(library "")
  if(AOTI_SHIM_CUDA_ROOT)
    set(origin "root")
    set(include_dir "${AOTI_SHIM_CUDA_ROOT}/include")
    set(library "${AOTI_SHIM_CUDA_ROOT}/lib/libcudart.so.13")
  else()
    # A system toolkit is used when present, as long as it is CUDA 13 (the wheel's
    # runtime dependency provides libcudart.so.13 on machines without the toolkit).
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND AND CUDAToolkit_VERSION_MAJOR EQUAL 13 AND TARGET CUDA::cudart)
      set(origin "toolkit")
      if(AOTI_SHIM_CUDA_WHEELS_FOUND AND "${CUDAToolkit_ROOT}" STREQUAL "${AOTI_SHIM_CUDA_WHEELS_ROOT}")
        set(origin "wheel")  # AotiShimCudaWheels.cmake pointed CUDAToolkit_ROOT at the nvcc wheels
      endif()
      get_target_property(library CUDA::cudart IMPORTED_LOCATION)
      set(include_dir "${CUDAToolkit_INCLUDE_DIRS}")
    else()
      _aoti_shim_wheel_cuda_root(root)
      if(root)
        set(origin "wheel")
        set(include_dir "${root}/include")
        set(library "${root}/lib/libcudart.so.13")
      endif()
    endif()
  endif()
  if(NOT origin)
    set(AOTI_SHIM_CUDA_FOUND FALSE PARENT_SCOPE)
    return()
  endif()
  list(GET include_dir 0 first_include)
  if(NOT EXISTS "${first_include}/cuda_runtime_api.h" OR NOT EXISTS "${first_include}/crt/host_defines.h")
    message(FATAL_ERROR "aoti_shim_find_cudart: ${first_include} lacks cuda_runtime_api.h or crt/host_defines.h "
                        "(install nvidia-cuda-runtime and nvidia-cuda-crt 13.0)")
  endif()
  if(NOT EXISTS "${library}")
    message(FATAL_ERROR "aoti_shim_find_cudart: ${library} does not exist")
  endif()
  add_library("${target}" SHARED IMPORTED GLOBAL)
  set_target_properties("${target}" PROPERTIES
    IMPORTED_LOCATION "${library}"
    INTERFACE_INCLUDE_DIRECTORIES "${include_dir}")
  get_filename_component(lib_dir "${library}" DIRECTORY)
  set(AOTI_SHIM_CUDA_FOUND TRUE PARENT_SCOPE)
  set(AOTI_SHIM_CUDA_ORIGIN "${origin}" PARENT_SCOPE)
  set(AOTI_SHIM_CUDA_LIB_DIR "${lib_dir}" PARENT_SCOPE)
endfunction()
