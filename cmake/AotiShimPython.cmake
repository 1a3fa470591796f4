# _aoti_shim_find_python(<out>): the Python interpreter a build asks (for aoti_shim, torch
# and NVIDIA's wheels), or "" when none is found. In order: AOTI_SHIM_PYTHON; the one
# scikit-build-core or FindPython chose (Python_EXECUTABLE, Python3_EXECUTABLE); the
# python3 of the environment this installed package lives in; PATH's.
# AotiShimConfig.cmake, AotiShimCuda.cmake and AotiShimCudaWheels.cmake (which runs before
# project(), without the rest) all ask this one.
include_guard(GLOBAL)

function(_aoti_shim_find_python out)
  foreach(var IN ITEMS AOTI_SHIM_PYTHON Python_EXECUTABLE Python3_EXECUTABLE)
    if(${var})
      set(${out} "${${var}}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  # An installed aoti-shim lives in <env>/lib/pythonX.Y/site-packages/aoti_shim/cmake.
  get_filename_component(env "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../../../../.." ABSOLUTE)
  find_program(_aoti_shim_py NAMES python3 python HINTS "${env}/bin" NO_DEFAULT_PATH NO_CACHE)
  if(NOT _aoti_shim_py)
    find_program(_aoti_shim_py NAMES python3 python NO_CACHE)
  endif()
  if(NOT _aoti_shim_py)
    set(_aoti_shim_py "")
  endif()
  set(${out} "${_aoti_shim_py}" PARENT_SCOPE)
endfunction()
