# AotiShim: apply one private symbol prefix to AOTInductor shim code and blobs.
include_guard(GLOBAL)

set(AOTI_SHIM_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

set(AOTI_SHIM_SYMBOL_PREFIX "" CACHE STRING "Private prefix for aoti_torch_* shim symbols (e.g. myrt_)")

# aoti_shim_prefix(<target> [PREFIX <p>])
# Adds AOTI_SHIM_SYMBOL_PREFIX=<p> as a PUBLIC usage requirement, so every consumer
# of the shim headers is compiled with the same names as the shims themselves.
function(aoti_shim_prefix target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "PREFIX" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aoti_shim_prefix: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "aoti_shim_prefix: '${target}' is not a target")
  endif()
  if(NOT DEFINED ARG_PREFIX)
    set(ARG_PREFIX "${AOTI_SHIM_SYMBOL_PREFIX}")
  endif()
  if(NOT ARG_PREFIX MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "aoti_shim_prefix: prefix '${ARG_PREFIX}' for '${target}' must be a non-empty C identifier prefix")
  endif()
  get_target_property(type "${target}" TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    set(scope INTERFACE)
  else()
    set(scope PUBLIC)
  endif()
  target_compile_definitions("${target}" ${scope} "AOTI_SHIM_SYMBOL_PREFIX=${ARG_PREFIX}")
  target_include_directories("${target}" ${scope} "$<BUILD_INTERFACE:${AOTI_SHIM_CMAKE_DIR}/include>")
endfunction()
