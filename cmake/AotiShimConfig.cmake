# AotiShim: apply one private symbol prefix to AOTInductor shim code and blobs.
#
# Found three ways: find_package(AotiShim CONFIG) (scikit-build-core's cmake.root
# entry point, or -DAotiShim_DIR=$(python -m aoti_shim --cmake-dir)), and
# include(AotiShim) through the cmake.module entry point.
#
#   aoti_shim_prefix(<target> [PREFIX <p>] [FORCE_INCLUDE] [NAMES_FROM <dir>...])
#   aoti_shim_limit_exports(<target> [PREFIX <p>] [NAMES <name>...])
#   aoti_shim_link_whole(<target> <static-lib>)
#   aoti_shim_add_model(<name> PACKAGE <dir|file.pt2> [MODEL <m>] [PREFIX <p>])
#   aoti_shim_check(<target> [AGAINST torch|<paths>...] [MODELS <targets>...] [PREFIX <p>])
#   aoti_shim_find_cudart(<target>)   (AotiShimCuda.cmake: CUDA 13 headers and libcudart, toolkit or wheels)
include_guard(GLOBAL)

if(CMAKE_VERSION VERSION_LESS 3.21)
  # string(JSON) reads the package's flag files; find_program(NO_CACHE) finds Python.
  message(FATAL_ERROR "AotiShim needs CMake 3.21 or newer (this is ${CMAKE_VERSION})")
endif()
# Our own policy settings, whatever the including project asked for; functions keep
# the settings in force where they are defined.
cmake_policy(PUSH)
cmake_policy(VERSION 3.21...3.31)

set(AOTI_SHIM_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
set(AOTI_SHIM_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/include")
set(AOTI_SHIM_RENAME_HEADER "${AOTI_SHIM_INCLUDE_DIR}/aoti_shim_rename.h")
if(NOT EXISTS "${AOTI_SHIM_RENAME_HEADER}")
  message(FATAL_ERROR "AotiShim: ${AOTI_SHIM_RENAME_HEADER} is missing: reinstall aoti-shim (pip install --force-reinstall <the aoti-shim clone>)")
endif()

# The prefix rule and the default prefix: one file, shared with the checker
# (checks/abi/prefix_rule.txt; ../checks/abi/ from here in a clone and in the wheel).
# Sets AOTI_SHIM_DEFAULT_PREFIX (shims/CMakeLists.txt's default), _AOTI_SHIM_IDENTIFIER
# and _AOTI_SHIM_SHIM_MARK (_aoti_shim_resolve_prefix's rule).
set(_aoti_shim_rule_file "${CMAKE_CURRENT_LIST_DIR}/../checks/abi/prefix_rule.txt")
if(NOT EXISTS "${_aoti_shim_rule_file}")
  message(FATAL_ERROR "AotiShim: ${_aoti_shim_rule_file} is missing: reinstall aoti-shim (pip install --force-reinstall <the aoti-shim clone>)")
endif()
file(STRINGS "${_aoti_shim_rule_file}" _aoti_shim_rule_lines REGEX "^[a-z_]+=")
foreach(_aoti_shim_line IN LISTS _aoti_shim_rule_lines)
  string(FIND "${_aoti_shim_line}" "=" _aoti_shim_eq)
  string(SUBSTRING "${_aoti_shim_line}" 0 ${_aoti_shim_eq} _aoti_shim_key)
  math(EXPR _aoti_shim_eq "${_aoti_shim_eq} + 1")
  string(SUBSTRING "${_aoti_shim_line}" ${_aoti_shim_eq} -1 _aoti_shim_value)
  string(TOUPPER "${_aoti_shim_key}" _aoti_shim_key)
  set(_AOTI_SHIM_RULE_${_aoti_shim_key} "${_aoti_shim_value}")
endforeach()
foreach(_aoti_shim_key IN ITEMS DEFAULT_PREFIX IDENTIFIER SHIM_MARK)
  if("${_AOTI_SHIM_RULE_${_aoti_shim_key}}" STREQUAL "")
    message(FATAL_ERROR "AotiShim: no ${_aoti_shim_key} in ${_aoti_shim_rule_file}")
  endif()
endforeach()
set(AOTI_SHIM_DEFAULT_PREFIX "${_AOTI_SHIM_RULE_DEFAULT_PREFIX}")
set(_AOTI_SHIM_IDENTIFIER "${_AOTI_SHIM_RULE_IDENTIFIER}")
set(_AOTI_SHIM_SHIM_MARK "${_AOTI_SHIM_RULE_SHIM_MARK}")

# _aoti_shim_find_python: which Python the build asks.
include("${CMAKE_CURRENT_LIST_DIR}/AotiShimPython.cmake")
# aoti_shim_find_cudart: CUDA headers and libcudart from a CUDA 13 toolkit or NVIDIA's wheels.
include("${CMAKE_CURRENT_LIST_DIR}/AotiShimCuda.cmake")

# The single source of truth for the prefix; scikit-build-core's plugin sets it.
set(AOTI_SHIM_SYMBOL_PREFIX "" CACHE STRING "Private prefix for aoti_torch_* shim symbols (e.g. myrt_)")
set(AOTI_SHIM_EXECUTABLE "" CACHE STRING
  "Command that runs the aoti-shim CLI (a ;-list is allowed); empty: <python> -m aoti_shim")
set(AOTI_SHIM_PYTHON "" CACHE FILEPATH "Python interpreter with aoti_shim (and torch, for models) installed")
set(AOTI_SHIM_TORCH_INCLUDE_DIR "" CACHE PATH "torch's include folder (default: asked of `aoti-shim --torch-include-dir`)")

if(DEFINED SKBUILD_PROJECT_NAME AND NOT AotiShim_FIND_QUIETLY)
  # Under scikit-build-core the interpreter is the build environment's.
  message(STATUS "AotiShim: ${AOTI_SHIM_CMAKE_DIR} (scikit-build-core build of ${SKBUILD_PROJECT_NAME})")
endif()

# --- internal helpers --------------------------------------------------------

# _aoti_shim_resolve_prefix(<fn> <target> <argv> <missing_values> <given> <out> [FROM_TARGET] [OPTIONAL])
# The one prefix resolver of every function (<fn>, named in its errors). <argv> and
# <missing_values> are the caller's "${ARGV}" and ARG_KEYWORDS_MISSING_VALUES (an empty
# PREFIX is an error), <given> its PREFIX. The first that gives one: <given>; with
# FROM_TARGET, the prefix aoti_shim_prefix() gave <target>; the cache's
# AOTI_SHIM_SYMBOL_PREFIX. None is an error, or with OPTIONAL an empty <out>. The prefix
# found is held to the checker's rule (checks/abi/prefix.py) here, once, and announced.
function(_aoti_shim_resolve_prefix fn target argv missing_values given out)
  cmake_parse_arguments(PARSE_ARGV 6 R "FROM_TARGET;OPTIONAL" "" "")
  _aoti_shim_prefix_empty("${argv}" "${missing_values}" empty)
  if(empty)
    message(FATAL_ERROR "${fn}: empty PREFIX for '${target}': a prefix must be a non-empty C identifier prefix")
  endif()
  # Prefixes are compared as strings: a prefix such as N_ must not read as false.
  if("${given}" STREQUAL "" AND R_FROM_TARGET)
    get_target_property(given "${target}" AOTI_SHIM_SYMBOL_PREFIX)
    if("${given}" MATCHES "-NOTFOUND$")
      set(given "")
    endif()
  endif()
  if("${given}" STREQUAL "")
    set(given "${AOTI_SHIM_SYMBOL_PREFIX}")
  endif()
  if("${given}" STREQUAL "")
    if(R_OPTIONAL)
      set(${out} "" PARENT_SCOPE)
      return()
    endif()
    if(DEFINED SKBUILD_PROJECT_NAME)
      # Under pip the prefix is a setting of the build backend, not a -D the user passes.
      message(FATAL_ERROR "${fn}: no prefix for '${target}': set prefix = \"<p>\" under [tool.aoti-shim] in "
                          "pyproject.toml (or pip's -C aoti-shim.prefix=<p>), or pass PREFIX <p>")
    endif()
    message(FATAL_ERROR "${fn}: no prefix for '${target}': pass PREFIX <p> or set -DAOTI_SHIM_SYMBOL_PREFIX=<p>")
  endif()
  # The checker's rule (checks/abi/prefix_rule.txt, read above).
  if(NOT "${given}" MATCHES "^${_AOTI_SHIM_IDENTIFIER}$")
    message(FATAL_ERROR "${fn}: prefix '${given}' for '${target}' is not a C identifier prefix (${_AOTI_SHIM_IDENTIFIER})")
  endif()
  string(FIND "${given}" "${_AOTI_SHIM_SHIM_MARK}" mark_at)
  if(mark_at EQUAL 0)
    message(FATAL_ERROR "${fn}: prefix '${given}' for '${target}' starts with '${_AOTI_SHIM_SHIM_MARK}', which libtorch uses itself")
  endif()
  # Say once per configure (and per distinct prefix) which names will be built.
  get_property(seen GLOBAL PROPERTY _AOTI_SHIM_ANNOUNCED)
  if(NOT "${given}" IN_LIST seen)
    set_property(GLOBAL APPEND PROPERTY _AOTI_SHIM_ANNOUNCED "${given}")
    message(STATUS "AotiShim: symbol prefix '${given}' (aoti_torch_X -> ${given}aoti_torch_X)")
    # Legal, but almost always a slip (checks/abi/prefix.py lacks_separator, the same rule).
    if(NOT "${given}" MATCHES "_$")
      message(WARNING "${fn}: prefix '${given}' for '${target}' does not end in '_': shim names become "
                      "${given}aoti_torch_x; did you mean '${given}_'?")
    endif()
  endif()
  set(${out} "${given}" PARENT_SCOPE)
endfunction()

function(_aoti_shim_require_target fn target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: '${target}' is not a target")
  endif()
  get_target_property(aliased "${target}" ALIASED_TARGET)
  get_target_property(imported "${target}" IMPORTED)
  if(aliased OR imported)
    message(FATAL_ERROR "${fn}: '${target}' is an alias or imported target; pass the real target built here")
  endif()
endfunction()

# TRUE when the caller's arguments (after its first) give PREFIX no value or an
# empty one; cmake_parse_arguments drops `PREFIX ""` silently before CMake 3.31.
function(_aoti_shim_prefix_empty args missing_values out)
  set(empty FALSE)
  if("PREFIX" IN_LIST missing_values)
    set(empty TRUE)
  endif()
  list(LENGTH args count)
  if(count GREATER 1)
    list(SUBLIST args 1 -1 args)
  else()
    set(args "")
  endif()
  list(FIND args PREFIX at)
  if(at GREATER -1)
    math(EXPR next "${at} + 1")
    list(LENGTH args count)
    if(next GREATER_EQUAL count)
      set(empty TRUE)
    else()
      list(GET args ${next} value)
      if(value STREQUAL "")
        set(empty TRUE)
      endif()
    endif()
  endif()
  set(${out} ${empty} PARENT_SCOPE)
endfunction()

# <fn> takes a shared library (or module) target built here; <why> says why, after its type.
function(_aoti_shim_require_shared fn target why)
  _aoti_shim_require_target(${fn} "${target}")
  get_target_property(type "${target}" TYPE)
  if(NOT type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY)$")
    message(FATAL_ERROR "${fn}: '${target}' is a ${type}; ${why}")
  endif()
endfunction()

# <fn>'s leftover arguments (cmake_parse_arguments' UNPARSED_ARGUMENTS) are an error.
function(_aoti_shim_no_extra_args fn unparsed)
  if(unparsed)
    message(FATAL_ERROR "${fn}: unknown arguments: ${unparsed}")
  endif()
endfunction()

# The Python interpreter that has aoti_shim (and, for models, torch); a fatal error if none.
function(_aoti_shim_python out)
  _aoti_shim_find_python(py)
  if(NOT py)
    message(FATAL_ERROR "AotiShim: no Python interpreter found: set -DAOTI_SHIM_PYTHON=<python>")
  endif()
  set(${out} "${py}" PARENT_SCOPE)
endfunction()

# The command that runs the aoti-shim CLI, verified once per configure.
function(_aoti_shim_cli fn out)
  get_property(cli GLOBAL PROPERTY _AOTI_SHIM_CLI)
  if(NOT cli)
    if(AOTI_SHIM_EXECUTABLE)
      set(cli "${AOTI_SHIM_EXECUTABLE}")
    else()
      _aoti_shim_python(py)
      set(cli "${py}" -m aoti_shim)
    endif()
    execute_process(COMMAND ${cli} --version
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      string(REPLACE ";" " " shown "${cli}")
      string(STRIP "${err}" err)
      message(FATAL_ERROR "${fn}: cannot run aoti-shim ('${shown} --version' failed: ${err}): "
                          "set -DAOTI_SHIM_EXECUTABLE=<aoti-shim> or -DAOTI_SHIM_PYTHON=<python>")
    endif()
    set_property(GLOBAL PROPERTY _AOTI_SHIM_CLI "${cli}")
  endif()
  set(${out} "${cli}" PARENT_SCOPE)
endfunction()

# torch's include folder (the blob's wrapper includes torch's runtime headers).
# A folder the user gave (-DAOTI_SHIM_TORCH_INCLUDE_DIR, or the environment variable of that
# name at the first configure) stays; one asked of the CLI is asked again at each configure
# (once per configure), since $AOTI_SHIM_TORCH or the interpreter's torch may have changed
# since: a cached answer compiled a reconfigured build against the old torch's headers.
function(_aoti_shim_torch_include fn out)
  set(ours FALSE)
  if(NOT AOTI_SHIM_TORCH_INCLUDE_DIR OR AOTI_SHIM_TORCH_INCLUDE_DIR STREQUAL "${_AOTI_SHIM_TORCH_INCLUDE_ASKED}")
    set(ours TRUE)  # unset, or the CLI's answer of an earlier configure: not the user's choice
  endif()
  if(ours AND NOT "$ENV{AOTI_SHIM_TORCH_INCLUDE_DIR}" STREQUAL "")
    # An isolated build environment (pip, scikit-build-core) has no torch: let the caller say where.
    set(AOTI_SHIM_TORCH_INCLUDE_DIR "$ENV{AOTI_SHIM_TORCH_INCLUDE_DIR}" CACHE PATH "torch's include folder" FORCE)
    set(_AOTI_SHIM_TORCH_INCLUDE_ASKED "" CACHE INTERNAL "")
  elseif(ours)
    get_property(asked GLOBAL PROPERTY _AOTI_SHIM_TORCH_INCLUDE_ASKED_NOW SET)
    if(NOT asked)
      # The CLI finds torch as the checker does ($AOTI_SHIM_TORCH, which the pip backend sets
      # for an isolated build, else its interpreter's torch): one implementation, in Python.
      _aoti_shim_cli(${fn} cli)
      execute_process(COMMAND ${cli} --torch-include-dir
                      RESULT_VARIABLE rc OUTPUT_VARIABLE dir ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(NOT rc EQUAL 0 OR dir STREQUAL "")
        string(REPLACE ";" " " shown "${cli}")
        string(STRIP "${err}" err)
        string(REGEX REPLACE "^aoti-shim: error: " "" err "${err}")
        message(FATAL_ERROR "${fn}: torch's headers not found ('${shown} --torch-include-dir': ${err}): "
                            "set -DAOTI_SHIM_TORCH_INCLUDE_DIR=<site-packages>/torch/include (or the environment "
                            "variable of that name)")
      endif()
      set(AOTI_SHIM_TORCH_INCLUDE_DIR "${dir}" CACHE PATH "torch's include folder (default: asked of `aoti-shim --torch-include-dir`)" FORCE)
      set(_AOTI_SHIM_TORCH_INCLUDE_ASKED "${dir}" CACHE INTERNAL "")
      set_property(GLOBAL PROPERTY _AOTI_SHIM_TORCH_INCLUDE_ASKED_NOW "${dir}")
    endif()
  endif()
  string(FIND "${AOTI_SHIM_TORCH_INCLUDE_DIR}" ";" semicolon)
  if(semicolon GREATER -1)
    # A list separator to CMake: the include path would split in two (a relative-path error at generate time).
    message(FATAL_ERROR "${fn}: torch's include folder '${AOTI_SHIM_TORCH_INCLUDE_DIR}' has a ';' in its path, which CMake reads as a "
                        "list separator; use a torch whose path has none")
  endif()
  if(NOT EXISTS "${AOTI_SHIM_TORCH_INCLUDE_DIR}/torch/csrc/inductor/aoti_torch/c/shim.h")
    message(FATAL_ERROR "${fn}: ${AOTI_SHIM_TORCH_INCLUDE_DIR} holds no torch/csrc/inductor/aoti_torch/c/shim.h")
  endif()
  set(${out} "${AOTI_SHIM_TORCH_INCLUDE_DIR}" PARENT_SCOPE)
endfunction()

# --- aoti_shim_prefix ----------------------------------------------------------

# Settings the pip backend passes (the [tool.aoti-shim] keys force-include, names-from,
# exports, export-names); aoti_shim_prefix applies them to every target it marks.
set(AOTI_SHIM_FORCE_INCLUDE OFF CACHE BOOL "aoti_shim_prefix force-includes the rename header (as FORCE_INCLUDE)")
set(AOTI_SHIM_NAMES_FROM "" CACHE STRING "Folders of the runtime's shim headers whose aoti_torch_* names join the rename header (as NAMES_FROM)")
set(AOTI_SHIM_EXPORTS "all" CACHE STRING "'shims': aoti_shim_prefix limits a shared library's exports to the shim ABI (as aoti_shim_limit_exports)")
set_property(CACHE AOTI_SHIM_EXPORTS PROPERTY STRINGS all shims)
set(AOTI_SHIM_EXPORT_NAMES "" CACHE STRING "Further names (or version-script globs) that stay exported under AOTI_SHIM_EXPORTS=shims")

# <text> made safe inside a generator expression ('>' and ',' end or split one).
function(_aoti_shim_genex_literal text out)
  string(REPLACE ">" "$<ANGLE-R>" text "${text}")
  string(REPLACE "," "$<COMMA>" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Force-include <header> for every C, C++ and CUDA source of <target> (<scope>): the
# runtime's sources include their own headers, never ours. One joined option per
# compiler (no SHELL:, which CMake would de-duplicate across languages): MSVC /FI,
# nvcc --pre-include, GCC/Clang (and clang's CUDA) -include.
function(_aoti_shim_force_include fn target scope header)
  string(FIND "${header}" ";" semicolon)
  if(semicolon GREATER -1)
    message(FATAL_ERROR "${fn}: the rename header's path '${header}' has a ';', which CMake reads as a list separator")
  endif()
  _aoti_shim_genex_literal("${header}" h)
  target_compile_options("${target}" ${scope}
    "$<$<COMPILE_LANG_AND_ID:C,MSVC>:/FI${h}>"
    "$<$<COMPILE_LANG_AND_ID:CXX,MSVC>:/FI${h}>"
    "$<$<AND:$<COMPILE_LANGUAGE:C>,$<NOT:$<C_COMPILER_ID:MSVC>>>:-include${h}>"
    "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CXX_COMPILER_ID:MSVC>>>:-include${h}>"
    "$<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:--pre-include=${h}>"
    "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<NOT:$<CUDA_COMPILER_ID:NVIDIA>>>:-include${h}>")
endfunction()

# One rename header per build tree, in <build>/aoti_shim_rename/, for every target
# aoti_shim_prefix marks: a static shim library and the shared library that links it see the
# same header, so two NAMES_FROM lists cannot disagree about a name (with a header per target,
# whichever came first on a source's include path won, silently). <target>'s NAMES_FROM
# folders join the build's union; the header is written once, at the end of the configure
# (_aoti_shim_write_rename_header), so a reconfigure rewrites it only when its text changes.
# Sets <out> to the header's folder.
function(_aoti_shim_tree_header fn target dirs out)
  set(folders "")
  foreach(dir IN LISTS dirs)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT IS_DIRECTORY "${dir}")
      message(FATAL_ERROR "${fn}: NAMES_FROM '${dir}' for '${target}' is not a folder")
    endif()
    list(APPEND folders "${dir}")
    file(GLOB_RECURSE headers LIST_DIRECTORIES FALSE "${dir}/*.h" "${dir}/*.hpp" "${dir}/*.cuh")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${headers} "${dir}")
  endforeach()
  set(folder "${CMAKE_BINARY_DIR}/aoti_shim_rename")
  if(folders)
    _aoti_shim_cli(${fn} cli)  # verified now, where the caller's Python settings are in scope
    set_property(GLOBAL APPEND PROPERTY _AOTI_SHIM_NAMES_FROM_ALL ${folders})
    string(REPLACE ";" ", " shown "${folders}")
    message(STATUS "AotiShim: '${target}' renames the aoti_torch_* names declared under ${shown} too "
                   "(${folder}/aoti_shim_rename.h, the build's one rename header)")
  endif()
  get_property(scheduled GLOBAL PROPERTY _AOTI_SHIM_RENAME_SCHEDULED)
  if(NOT scheduled)
    set_property(GLOBAL PROPERTY _AOTI_SHIM_RENAME_SCHEDULED TRUE)
    # A deferred call reads its arguments when it runs: pass them as global properties.
    set_property(GLOBAL PROPERTY _AOTI_SHIM_RENAME_FOLDER "${folder}")
    set_property(GLOBAL PROPERTY _AOTI_SHIM_RENAME_SHIPPED "${AOTI_SHIM_RENAME_HEADER}")
    set_property(GLOBAL PROPERTY _AOTI_SHIM_RENAME_FN "${fn}")
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _aoti_shim_write_rename_header)
  endif()
  set(${out} "${folder}" PARENT_SCOPE)
endfunction()

# The build's rename header: the shipped one when no target gave NAMES_FROM, else one
# `aoti-shim rename-header` generates (one name scanner, in Python) over every NAMES_FROM folder.
function(_aoti_shim_write_rename_header)
  get_property(folder GLOBAL PROPERTY _AOTI_SHIM_RENAME_FOLDER)
  get_property(shipped GLOBAL PROPERTY _AOTI_SHIM_RENAME_SHIPPED)
  get_property(fn GLOBAL PROPERTY _AOTI_SHIM_RENAME_FN)
  get_property(dirs GLOBAL PROPERTY _AOTI_SHIM_NAMES_FROM_ALL)
  set(header "${folder}/aoti_shim_rename.h")
  file(MAKE_DIRECTORY "${folder}")
  if(NOT dirs)
    file(COPY_FILE "${shipped}" "${header}" ONLY_IF_DIFFERENT)
    return()
  endif()
  list(REMOVE_DUPLICATES dirs)
  set(args "")
  foreach(dir IN LISTS dirs)
    list(APPEND args --shim-include "${dir}")
  endforeach()
  get_property(cli GLOBAL PROPERTY _AOTI_SHIM_CLI)
  execute_process(COMMAND ${cli} rename-header --output "${header}.new" ${args}
                  WORKING_DIRECTORY "${folder}"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    string(REGEX REPLACE "^aoti-shim: error: " "" err "${err}")
    message(FATAL_ERROR "${fn}: cannot generate the rename header from NAMES_FROM: ${err}")
  endif()
  file(COPY_FILE "${header}.new" "${header}" ONLY_IF_DIFFERENT)
  file(REMOVE "${header}.new")
endfunction()

# aoti_shim_prefix(<target> [PREFIX <p>] [FORCE_INCLUDE] [NAMES_FROM <dir>...])
# Adds AOTI_SHIM_SYMBOL_PREFIX=<p> and the rename header's folder as a PUBLIC usage
# requirement (INTERFACE for interface libraries): every consumer of the shim headers
# is compiled with the same names as the shims. PRIVATE would reproduce upstream's
# bug: consumers call the unprefixed names. FORCE_INCLUDE also force-includes the
# rename header into every C, C++ and CUDA source (sources that never include it);
# NAMES_FROM adds the aoti_torch_* functions declared in the runtime's own headers
# to the target's rename header. The cache variables AOTI_SHIM_FORCE_INCLUDE,
# AOTI_SHIM_NAMES_FROM and AOTI_SHIM_EXPORTS (the pip backend's settings) apply too.
function(aoti_shim_prefix target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "FORCE_INCLUDE" "PREFIX" "NAMES_FROM")
  _aoti_shim_no_extra_args(aoti_shim_prefix "${ARG_UNPARSED_ARGUMENTS}")
  _aoti_shim_require_target(aoti_shim_prefix "${target}")
  if("NAMES_FROM" IN_LIST ARG_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "aoti_shim_prefix: NAMES_FROM for '${target}' needs at least one folder")
  endif()
  _aoti_shim_resolve_prefix(aoti_shim_prefix "${target}" "${ARGV}" "${ARG_KEYWORDS_MISSING_VALUES}" "${ARG_PREFIX}" prefix)
  get_target_property(type "${target}" TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    set(scope INTERFACE)
  else()
    set(scope PUBLIC)
  endif()
  get_target_property(previous "${target}" AOTI_SHIM_SYMBOL_PREFIX)
  if(NOT "${previous}" MATCHES "-NOTFOUND$" AND NOT "${previous}" STREQUAL "${prefix}")
    message(FATAL_ERROR "aoti_shim_prefix: '${target}' already has prefix '${previous}', not '${prefix}'")
  endif()
  set_target_properties("${target}" PROPERTIES AOTI_SHIM_SYMBOL_PREFIX "${prefix}")
  target_compile_definitions("${target}" ${scope} "AOTI_SHIM_SYMBOL_PREFIX=${prefix}")
  set(names_from ${ARG_NAMES_FROM} ${AOTI_SHIM_NAMES_FROM})
  if(names_from)
    list(REMOVE_DUPLICATES names_from)
  endif()
  _aoti_shim_tree_header(aoti_shim_prefix "${target}" "${names_from}" include_dir)
  # Before any other include folder: the build's header (NAMES_FROM) must win over the shipped one.
  target_include_directories("${target}" BEFORE ${scope} "$<BUILD_INTERFACE:${include_dir}>")
  if(ARG_FORCE_INCLUDE OR AOTI_SHIM_FORCE_INCLUDE)
    _aoti_shim_force_include(aoti_shim_prefix "${target}" ${scope} "${include_dir}/aoti_shim_rename.h")
  endif()
  if(AOTI_SHIM_EXPORTS STREQUAL "shims" AND type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY)$")
    aoti_shim_limit_exports("${target}" NAMES ${AOTI_SHIM_EXPORT_NAMES})
  elseif(NOT AOTI_SHIM_EXPORTS MATCHES "^(all|shims)$")
    message(FATAL_ERROR "aoti_shim_prefix: AOTI_SHIM_EXPORTS is '${AOTI_SHIM_EXPORTS}'; it is 'all' or 'shims'")
  endif()
endfunction()

# --- aoti_shim_limit_exports ------------------------------------------------------

# aoti_shim_limit_exports(<target> [PREFIX <p>] [NAMES <name-or-glob>...])
# Links the shared library <target> with a generated version script: only the prefixed
# shim ABI (<p>aoti_torch_*, <p>aoti_record_function_start/_end, the caller-stream API
# <p>aoti_shim_caller_stream_*) and the NAMES stay global. Everything else is local: the
# inline template symbols a .cu file using CUB or Thrust exports by default (CCCL,
# libcu++), which libtorch_cuda.so exports too, and the standard library's
# instantiations. -fvisibility=hidden cannot do this for sources whose export macro is empty.
function(aoti_shim_limit_exports target)
  set(fn aoti_shim_limit_exports)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "PREFIX" "NAMES")
  _aoti_shim_no_extra_args(${fn} "${ARG_UNPARSED_ARGUMENTS}")
  _aoti_shim_require_shared(${fn} "${target}" "a version script limits a shared library's exports")
  if(WIN32 OR APPLE)
    message(FATAL_ERROR "${fn}: '${target}': version scripts are an ELF linker's (GNU ld, gold, lld, mold)")
  endif()
  _aoti_shim_resolve_prefix(${fn} "${target}" "${ARGV}" "${ARG_KEYWORDS_MISSING_VALUES}" "${ARG_PREFIX}" prefix FROM_TARGET)
  # A second call (aoti_shim_prefix under AOTI_SHIM_EXPORTS=shims, and an explicit one) adds
  # its NAMES to the same script: a shared library takes one version script.
  get_target_property(done "${target}" _AOTI_SHIM_LIMITED_EXPORTS)
  get_target_property(kept "${target}" _AOTI_SHIM_EXPORT_NAMES)
  if(NOT kept)
    set(kept "")
  endif()
  list(APPEND kept ${ARG_NAMES})
  list(REMOVE_DUPLICATES kept)
  set_target_properties("${target}" PROPERTIES _AOTI_SHIM_EXPORT_NAMES "${kept}")
  set(globals "")
  foreach(name IN ITEMS "${prefix}aoti_torch_*" "${prefix}aoti_record_function_start" "${prefix}aoti_record_function_end"
                        "${prefix}aoti_shim_caller_stream_*" ${kept})
    if(NOT name MATCHES "^[A-Za-z0-9_.$*?]+$")
      message(FATAL_ERROR "${fn}: NAMES '${name}' for '${target}' is neither a symbol name nor a version-script glob")
    endif()
    string(APPEND globals "    ${name};\n")
  endforeach()
  set(script "${CMAKE_CURRENT_BINARY_DIR}/aoti_shim_exports/${target}.map")
  file(CONFIGURE OUTPUT "${script}"
       CONTENT "/* Generated by aoti_shim_limit_exports: the shim ABI of ${target}. */\n{\n  global:\n${globals}  local:\n    *;\n};\n"
       @ONLY)
  if(NOT done)
    target_link_options("${target}" PRIVATE "LINKER:--version-script=${script}")
    set_property(TARGET "${target}" APPEND PROPERTY LINK_DEPENDS "${script}")
    set_target_properties("${target}" PROPERTIES _AOTI_SHIM_LIMITED_EXPORTS "${script}")
  endif()
endfunction()

# --- aoti_shim_link_whole --------------------------------------------------------

# aoti_shim_link_whole(<target> <static-lib>)
# Links every object of <static-lib> into <target>, PRIVATE: shims that only a
# dlopen'd blob references survive --gc-sections, and a thread-local registry in
# the archive gets exactly one definer.
function(aoti_shim_link_whole target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "")
  _aoti_shim_require_target(aoti_shim_link_whole "${target}")
  list(LENGTH ARG_UNPARSED_ARGUMENTS count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "aoti_shim_link_whole: expected (<target> <static-lib>), got (${target} ${ARG_UNPARSED_ARGUMENTS})")
  endif()
  set(lib "${ARG_UNPARSED_ARGUMENTS}")
  if(TARGET "${lib}")
    get_target_property(lib_type "${lib}" TYPE)
    if(NOT lib_type STREQUAL "STATIC_LIBRARY")
      message(FATAL_ERROR "aoti_shim_link_whole: '${lib}' is a ${lib_type}, not a static library")
    endif()
  elseif(NOT lib MATCHES "\\.a$" OR NOT EXISTS "${lib}")
    message(FATAL_ERROR "aoti_shim_link_whole: '${lib}' is neither a static library target nor an existing .a file")
  endif()
  get_target_property(type "${target}" TYPE)
  if(NOT type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY|EXECUTABLE)$")
    message(FATAL_ERROR "aoti_shim_link_whole: '${target}' is a ${type}; whole-archive linking needs a linked target")
  endif()
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.24)
    target_link_libraries("${target}" PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${lib}>")
  elseif(TARGET "${lib}")
    # Older CMake: the archive between the GNU ld switches, its usage requirements after.
    target_link_libraries("${target}" PRIVATE
      "-Wl,--whole-archive" "$<TARGET_FILE:${lib}>" "-Wl,--no-whole-archive" "${lib}")
  else()
    target_link_libraries("${target}" PRIVATE "-Wl,--whole-archive" "${lib}" "-Wl,--no-whole-archive")
  endif()
endfunction()

# --- aoti_shim_add_model ----------------------------------------------------------

# Turn kernel binaries into an object the blob links: the wrapper refers to
# __<kernel>_start/_end, as torch's own embedding names them. Each kernel uses its
# cubin/fatbin when the package has one, else its PTX through nvcc (as torch's
# generated CMakeLists.txt does).
function(_aoti_shim_embed_kernels fn name dir compute out)
  file(GLOB binaries LIST_DIRECTORIES FALSE "${dir}/*.cubin" "${dir}/*.fatbin" "${dir}/*.hsaco" "${dir}/*.spv")
  file(GLOB ptx_files LIST_DIRECTORIES FALSE "${dir}/*.ptx")
  set(kernels "")
  set(files "")
  foreach(blob IN LISTS binaries)
    get_filename_component(file "${blob}" NAME)
    string(REGEX REPLACE "\\..*$" "" kernel "${file}")
    if(NOT kernel IN_LIST kernels)
      list(APPEND kernels "${kernel}")
      list(APPEND files "${blob}")
    endif()
  endforeach()
  foreach(ptx IN LISTS ptx_files)
    get_filename_component(file "${ptx}" NAME)
    string(REGEX REPLACE "\\..*$" "" kernel "${file}")
    if(kernel IN_LIST kernels)
      continue()
    endif()
    find_program(AOTI_SHIM_NVCC NAMES nvcc HINTS "${CUDAToolkit_BIN_DIR}" ENV CUDA_HOME PATH_SUFFIXES bin)
    if(NOT AOTI_SHIM_NVCC OR NOT compute)
      message(FATAL_ERROR "${fn}: '${file}' is PTX, which needs nvcc and the package's compute capability: "
                          "set -DAOTI_SHIM_NVCC=<nvcc> or package cubins")
    endif()
    set(fatbin "${CMAKE_CURRENT_BINARY_DIR}/${name}_kernels/${kernel}.fatbin")
    add_custom_command(OUTPUT "${fatbin}"
      COMMAND "${AOTI_SHIM_NVCC}" --fatbin "${ptx}" -o "${fatbin}"
              -gencode "arch=compute_${compute},code=compute_${compute}"
              -gencode "arch=compute_${compute},code=sm_${compute}"
      DEPENDS "${ptx}" VERBATIM)
    list(APPEND kernels "${kernel}")
    list(APPEND files "${fatbin}")
  endforeach()
  if(NOT kernels)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  set(asm "/* Generated by aoti_shim_add_model: kernel binaries of ${name}. */\n")
  foreach(kernel blob IN ZIP_LISTS kernels files)
    string(APPEND asm
      "__asm__(\".section .rodata\\n.balign 16\\n.globl __${kernel}_start\\n.hidden __${kernel}_start\\n\"\n"
      "        \".globl __${kernel}_end\\n.hidden __${kernel}_end\\n__${kernel}_start:\\n\"\n"
      "        \".incbin \\\"${blob}\\\"\\n__${kernel}_end:\\n.byte 0\\n.previous\\n\");\n")
  endforeach()
  set(source "${CMAKE_CURRENT_BINARY_DIR}/${name}_kernels.cpp")
  file(CONFIGURE OUTPUT "${source}" CONTENT "${asm}" @ONLY)
  set_source_files_properties("${source}" PROPERTIES OBJECT_DEPENDS "${files}")
  set(${out} "${source}" PARENT_SCOPE)
endfunction()

# The strings of the JSON array <key> in <json>, as a list (empty when the key is missing).
function(_aoti_shim_json_strings json key out)
  set(items "")
  string(JSON n ERROR_VARIABLE err LENGTH "${json}" ${key})
  if(NOT err AND n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON item GET "${json}" ${key} ${i})
      list(APPEND items "${item}")
    endforeach()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# A .pt2 archive's content in the build tree, or the package folder itself. An archive
# is unpacked only when its content changes, so a re-configure does not touch the
# sources and rebuild the blob.
function(_aoti_shim_model_package fn name given out)
  if(NOT given)
    message(FATAL_ERROR "${fn}: PACKAGE <dir> is required for '${name}'")
  endif()
  get_filename_component(package "${given}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${package}")
    message(FATAL_ERROR "${fn}: package '${package}' for '${name}' does not exist")
  endif()
  if(NOT IS_DIRECTORY "${package}")
    set(unpacked "${CMAKE_CURRENT_BINARY_DIR}/${name}_package")
    file(SHA256 "${package}" digest)
    set(stamp "${unpacked}/.aoti_shim_sha256")
    set(have "")
    if(EXISTS "${stamp}")
      file(READ "${stamp}" have)
    endif()
    if(NOT have STREQUAL digest)
      file(REMOVE_RECURSE "${unpacked}")
      file(ARCHIVE_EXTRACT INPUT "${package}" DESTINATION "${unpacked}")
      file(WRITE "${stamp}" "${digest}")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${package}")
    set(package "${unpacked}")
  endif()
  set(${out} "${package}" PARENT_SCOPE)
endfunction()

# The model folder of <package>: the one holding <hash>.wrapper.cpp (named <model> when given).
function(_aoti_shim_model_dir fn package model out)
  file(GLOB_RECURSE wrappers LIST_DIRECTORIES FALSE "${package}/*.wrapper.cpp")
  set(model_dirs "")
  foreach(wrapper IN LISTS wrappers)
    get_filename_component(dir "${wrapper}" DIRECTORY)
    get_filename_component(leaf "${dir}" NAME)
    if(model STREQUAL "" OR leaf STREQUAL model)
      list(APPEND model_dirs "${dir}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES model_dirs)
  list(LENGTH model_dirs count)
  if(count EQUAL 0)
    message(FATAL_ERROR "${fn}: no *.wrapper.cpp${model} under '${package}': "
                        "was it made with aot_inductor.package_cpp_only=True?")
  elseif(count GREATER 1)
    message(FATAL_ERROR "${fn}: '${package}' holds ${count} models; choose one with MODEL <name>")
  endif()
  set(${out} "${model_dirs}" PARENT_SCOPE)
endfunction()

# The device ("cpu" unless the metadata says otherwise) and compute capability of the model in <dir>.
function(_aoti_shim_model_metadata dir device_out compute_out)
  set(device "cpu")
  set(compute "")
  file(GLOB metadata_json LIST_DIRECTORIES FALSE "${dir}/*_metadata.json")
  if(metadata_json)
    list(GET metadata_json 0 metadata_json)
    file(READ "${metadata_json}" meta)
    string(JSON device ERROR_VARIABLE err GET "${meta}" AOTI_DEVICE_KEY)
    string(JSON compute ERROR_VARIABLE err GET "${meta}" AOTI_COMPUTE_CAPABILITY)
  endif()
  set(${device_out} "${device}" PARENT_SCOPE)
  set(${compute_out} "${compute}" PARENT_SCOPE)
endfunction()

# Refuse a model whose sources call an aoti_torch_* name that <header> does not rename:
# compiled as it is, the blob would import it unprefixed and bind to libtorch.
function(_aoti_shim_require_renamed fn name dir header)
  file(STRINGS "${header}" defines REGEX "^#define aoti_torch_[A-Za-z0-9_]+ ")
  list(TRANSFORM defines REPLACE "^#define (aoti_torch_[A-Za-z0-9_]+) .*$" "\\1")
  file(GLOB sources LIST_DIRECTORIES FALSE "${dir}/*.cpp")
  set(called "")
  foreach(source IN LISTS sources)
    file(STRINGS "${source}" lines REGEX "aoti_torch_[A-Za-z0-9_]+[ ]*\\(")
    foreach(line IN LISTS lines)
      string(REGEX MATCHALL "aoti_torch_[A-Za-z0-9_]+[ ]*\\(" calls "${line}")
      list(TRANSFORM calls REPLACE "[ ]*\\($" "")
      list(APPEND called ${calls})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES called)
  list(REMOVE_ITEM called ${defines})
  if(called)
    list(SORT called)
    list(LENGTH called count)
    string(REPLACE ";" ", " names "${called}")
    message(FATAL_ERROR "${fn}: '${name}' calls ${count} shim function(s) that ${header} does not rename, "
                        "so the blob would bind them to libtorch: ${names}. "
                        "Regenerate it with `aoti-shim rename-header` against the torch that made the package")
  endif()
endfunction()

# The blob target: the package's sources and objects, its kernels embedded, hidden
# visibility with only the AOTInductor API exported, the rename header force-included.
function(_aoti_shim_model_target fn name dir compute prefix torch_include)
  file(GLOB sources LIST_DIRECTORIES FALSE "${dir}/*.cpp")
  file(GLOB objects LIST_DIRECTORIES FALSE "${dir}/*.o")
  add_library("${name}" SHARED ${sources} ${objects})
  _aoti_shim_embed_kernels(${fn} "${name}" "${dir}" "${compute}" kernels_source)
  if(kernels_source)
    target_sources("${name}" PRIVATE "${kernels_source}")
  endif()
  set_target_properties("${name}" PROPERTIES
    AOTI_SHIM_SYMBOL_PREFIX "${prefix}"
    AOTI_SHIM_MODEL_DIR "${dir}"
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON
    # The blob's API (AOTInductorModel*) is marked default-visible; the rest stays inside.
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories("${name}" SYSTEM PRIVATE "${torch_include}")
  # The weights object carries no .note.GNU-stack; the blob must not ask for an executable stack.
  target_link_options("${name}" PRIVATE "LINKER:-z,noexecstack")
  # Export the AOTInductor API only: template instantiations of std:: types are
  # default-visible and would otherwise interpose the process's C++ runtime.
  set(exports "${CMAKE_CURRENT_BINARY_DIR}/${name}_exports.map")
  file(CONFIGURE OUTPUT "${exports}" CONTENT "{\n  global: AOTInductor*;\n  local: *;\n};\n")
  target_link_options("${name}" PRIVATE "LINKER:--version-script=${exports}")
  set_property(TARGET "${name}" APPEND PROPERTY LINK_DEPENDS "${exports}")
  target_compile_definitions("${name}" PRIVATE "AOTI_SHIM_SYMBOL_PREFIX=${prefix}")
  # Force-included: torch's shim headers, which the wrapper includes, know nothing of the prefix.
  target_compile_options("${name}" PRIVATE "SHELL:-include \"${AOTI_SHIM_RENAME_HEADER}\"")
endfunction()

# Definitions, language level and OpenMP from the package's recorded compile flags.
# Host specific flags (-march=native, the generating machine's include paths) are dropped;
# the instruction sets a CPU_CAPABILITY_* definition names are added back (_aoti_shim_isa_flags).
function(_aoti_shim_model_compile_flags fn name dir)
  file(GLOB compile_json LIST_DIRECTORIES FALSE "${dir}/*_compile_flags.json")
  if(NOT compile_json)
    return()
  endif()
  list(GET compile_json 0 compile_json)
  file(READ "${compile_json}" flags)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${compile_json}")
  _aoti_shim_json_strings("${flags}" definitions defs)
  _aoti_shim_json_strings("${flags}" cflags cflags)
  foreach(flag IN LISTS cflags)
    if(flag MATCHES "^D(.+)$")
      list(APPEND defs "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  get_target_property(prefix "${name}" AOTI_SHIM_SYMBOL_PREFIX)
  foreach(def IN LISTS defs)
    string(STRIP "${def}" def)
    if(def MATCHES "^AOTI_SHIM_SYMBOL_PREFIX=(.*)$")
      # Made with torch's own aot_inductor.shim_symbol_prefix: the blob already asks for that prefix.
      if(NOT "${CMAKE_MATCH_1}" STREQUAL "${prefix}")
        message(FATAL_ERROR "${fn}: '${name}': the package was made with "
                            "aot_inductor.shim_symbol_prefix '${CMAKE_MATCH_1}', not PREFIX '${prefix}'")
      endif()
      continue()  # defined once, by aoti_shim_add_model
    endif()
    target_compile_definitions("${name}" PRIVATE "${def}")
    _aoti_shim_isa_flags("${def}" isa)
    if(isa)
      target_compile_options("${name}" PRIVATE ${isa})
    endif()
  endforeach()
  foreach(flag IN LISTS cflags)
    if(flag MATCHES "^m(avx|fma|f16c|sse|amx|vsx|vx|zvector)")
      # An instruction set the package was compiled for (not -march/-mtune: this host's).
      target_compile_options("${name}" PRIVATE "-${flag}")
    elseif(flag MATCHES "^std=c\\+\\+([0-9]+)$")
      set_target_properties("${name}" PROPERTIES CXX_STANDARD "${CMAKE_MATCH_1}")
    elseif(flag STREQUAL "fopenmp")
      target_compile_options("${name}" PRIVATE -fopenmp)
      target_link_options("${name}" PRIVATE -fopenmp)
    elseif(flag MATCHES "^(O[0-3s]|f[a-z].*)$" AND NOT flag MATCHES "^f(PIC|pic)$")
      # Keep the optimisation and floating-point semantics torch compiled with.
      target_compile_options("${name}" PRIVATE "-${flag}")
    endif()
  endforeach()
endfunction()

# The instruction-set flags of the ISA a CPU_CAPABILITY_* definition names, as Inductor's
# cpu_vec_isa compiles for it: the package records that definition and -march=native, which
# is dropped, and torch's vec512/vec256 headers need the ISA enabled (Sleef's AVX-512
# declarations, the intrinsics). The blob then needs that ISA, as Inductor's own build does.
function(_aoti_shim_isa_flags definition out)
  set(flags "")
  if(MSVC)
    if(definition STREQUAL "CPU_CAPABILITY_AVX512")
      set(flags /arch:AVX512)
    elseif(definition STREQUAL "CPU_CAPABILITY_AVX2")
      set(flags /arch:AVX2)
    endif()
  elseif(definition STREQUAL "CPU_CAPABILITY_AVX512")
    set(flags -mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma)
  elseif(definition STREQUAL "CPU_CAPABILITY_AVX2")
    set(flags -mavx2 -mfma -mf16c)
  elseif(definition STREQUAL "CPU_CAPABILITY_VSX")
    set(flags -mvsx)
  elseif(definition STREQUAL "CPU_CAPABILITY_ZVECTOR")
    set(flags -mvx -mzvector)
  endif()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# The package's recorded libraries, refusing libtorch (the blob must not link it).
function(_aoti_shim_model_link_flags fn name dir device)
  file(GLOB linker_json LIST_DIRECTORIES FALSE "${dir}/*_linker_flags.json")
  if(NOT linker_json)
    return()
  endif()
  list(GET linker_json 0 linker_json)
  file(READ "${linker_json}" flags)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${linker_json}")
  _aoti_shim_json_strings("${flags}" libraries libs)
  foreach(lib IN LISTS libs)
    if(lib MATCHES "^(torch|torch_cpu|torch_cuda|c10|c10_cuda)$")
      message(FATAL_ERROR "${fn}: '${dir}' links ${lib}: make the package with aot_inductor.link_libtorch=False")
    endif()
    if(device STREQUAL "cuda" AND lib STREQUAL "cuda")
      continue()  # the driver: CUDA::cuda_driver (see _aoti_shim_model_cuda), stubs included
    endif()
    target_link_libraries("${name}" PRIVATE "${lib}")
  endforeach()
endfunction()

# An empty library named libcuda.so.1, to link a blob against where no driver library is in
# sight (no toolkit and its stubs, no driver: a CPU build machine with NVIDIA's wheels only).
# The blob then records NEEDED libcuda.so.1 and leaves its cu* calls undefined, as linking
# the real one would; at load time the machine's driver provides them. The stub is passed
# as a link option, not a library, so that CMake puts no RPATH to it into the blob.
function(_aoti_shim_driver_stub out)
  set(stub aoti_shim_cuda_driver_stub)
  if(NOT TARGET ${stub})
    set(source "${CMAKE_BINARY_DIR}/aoti_shim_cuda_driver_stub/stub.cpp")
    file(CONFIGURE OUTPUT "${source}" CONTENT "/* Link-time stand-in for libcuda.so.1: see aoti_shim_add_model. */\n" @ONLY)
    add_library(${stub} SHARED "${source}")
    set_target_properties(${stub} PROPERTIES OUTPUT_NAME cuda SOVERSION 1 EXCLUDE_FROM_ALL TRUE
      LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/aoti_shim_cuda_driver_stub")
  endif()
  set(${out} ${stub} PARENT_SCOPE)
endfunction()

# A CUDA model: the host provides the CUDA runtime at load time; the driver comes from libcuda.
# Headers from a CUDA 13 toolkit, else from NVIDIA's wheels (nvidia-cuda-runtime, nvidia-cuda-crt:
# aoti_shim_find_cudart's search); nothing of the runtime is linked. The driver library is the
# toolkit's (CUDA::cuda_driver, its stubs included), CUDA_cuda_driver_LIBRARY, or a stub.
function(_aoti_shim_model_cuda fn name)
  target_compile_definitions("${name}" PRIVATE USE_CUDA)
  if(NOT TARGET aoti_shim_model_cudart)
    aoti_shim_find_cudart(aoti_shim_model_cudart)
    if(NOT AOTI_SHIM_CUDA_FOUND)
      message(FATAL_ERROR "${fn}: '${name}' is a CUDA model and no CUDA 13 headers were found: install "
                          "nvidia-cuda-runtime==13.0.* and nvidia-cuda-crt==13.0.* into the build's Python, "
                          "set AOTI_SHIM_CUDA_ROOT, or install a CUDA 13 toolkit")
    endif()
    message(STATUS "AotiShim: CUDA models compile against the headers of the CUDA ${AOTI_SHIM_CUDA_ORIGIN}")
  endif()
  get_target_property(include_dirs aoti_shim_model_cudart INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories("${name}" SYSTEM PRIVATE ${include_dirs})
  if(TARGET CUDA::cuda_driver)
    target_link_libraries("${name}" PRIVATE CUDA::cuda_driver)
  elseif(CUDA_cuda_driver_LIBRARY)
    target_link_libraries("${name}" PRIVATE "${CUDA_cuda_driver_LIBRARY}")
  else()
    _aoti_shim_driver_stub(stub)
    add_dependencies("${name}" ${stub})
    target_link_options("${name}" PRIVATE "LINKER:--push-state,--no-as-needed" "$<TARGET_FILE:${stub}>" "LINKER:--pop-state")
    set_property(TARGET "${name}" APPEND PROPERTY LINK_DEPENDS "$<TARGET_FILE:${stub}>")
  endif()
endfunction()

# aoti_shim_add_model(<name> PACKAGE <dir|file.pt2> [MODEL <m>] [PREFIX <p>])
# Builds the C++ sources of an AOTInductor package made with
# aot_inductor.package_cpp_only=True into the shared library <name> (the blob),
# with the rename header force-included: the blob imports only prefixed shims.
# The package's own CMakeLists.txt (TorchStandalone, CMake >= 3.27) is not used.
function(aoti_shim_add_model name)
  set(fn aoti_shim_add_model)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "PACKAGE;MODEL;PREFIX" "")
  _aoti_shim_no_extra_args(${fn} "${ARG_UNPARSED_ARGUMENTS}")
  _aoti_shim_resolve_prefix(${fn} "${name}" "${ARGV}" "${ARG_KEYWORDS_MISSING_VALUES}" "${ARG_PREFIX}" prefix)
  if(TARGET "${name}")
    message(FATAL_ERROR "${fn}: target '${name}' already exists")
  endif()
  if(NOT name MATCHES "^[A-Za-z0-9_.+-]+$")
    message(FATAL_ERROR "${fn}: '${name}' is not a valid target name")
  endif()
  _aoti_shim_model_package(${fn} "${name}" "${ARG_PACKAGE}" package)
  _aoti_shim_model_dir(${fn} "${package}" "${ARG_MODEL}" dir)
  _aoti_shim_require_renamed(${fn} "${name}" "${dir}" "${AOTI_SHIM_RENAME_HEADER}")
  _aoti_shim_torch_include(${fn} torch_include)
  _aoti_shim_model_metadata("${dir}" device compute)
  _aoti_shim_model_target(${fn} "${name}" "${dir}" "${compute}" "${prefix}" "${torch_include}")
  _aoti_shim_model_compile_flags(${fn} "${name}" "${dir}")
  _aoti_shim_model_link_flags(${fn} "${name}" "${dir}" "${device}")
  if(device STREQUAL "cuda")
    _aoti_shim_model_cuda(${fn} "${name}")
  endif()
endfunction()

# --- aoti_shim_check ----------------------------------------------------------------

# aoti_shim_check(<target> [AGAINST torch|<paths>...] [MODELS <targets>...] [PREFIX <p>])
# After <target> (a shim library) is linked, runs `aoti-shim check` on it and on the
# MODELS blobs (built first), printing the checker's table into the build log; a
# blocking finding fails the build.
# The --model arguments of aoti_shim_check's MODELS (each a shared library target defined
# above the call, not linking the shims: a blob finds its shims at load time).
function(_aoti_shim_check_models fn target models out)
  set(args "")
  foreach(model IN LISTS models)
    if(NOT TARGET "${model}")
      # The usual cause: aoti_shim_check() written above the model's definition.
      message(FATAL_ERROR "${fn}: MODELS '${model}' is not a target (yet): define it first "
                          "(aoti_shim_add_model(${model} ...) or add_library(${model} SHARED ...) above this "
                          "aoti_shim_check())")
    endif()
    _aoti_shim_require_target(${fn} "${model}")
    get_target_property(model_type "${model}" TYPE)
    if(NOT model_type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY)$")
      message(FATAL_ERROR "${fn}: model '${model}' is a ${model_type}, not a shared library")
    endif()
    get_target_property(model_links "${model}" LINK_LIBRARIES)
    if(model_links AND "${target}" IN_LIST model_links)
      message(FATAL_ERROR "${fn}: model '${model}' links '${target}'; a blob finds its shims at load time")
    endif()
    list(APPEND args --model "$<TARGET_FILE:${model}>")
  endforeach()
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

# The --against arguments of aoti_shim_check: its AGAINST, else what the build backend checks against.
function(_aoti_shim_check_references fn given out)
  # No AGAINST: under pip, the backend's `against` setting (it passes its references, already
  # resolved, in $AOTI_SHIM_AGAINST; empty for against = []), else torch, the backend's
  # default: a check with no reference finds no collision.
  set(args "")
  if(NOT given)
    set(backend torch)
    if(DEFINED ENV{AOTI_SHIM_AGAINST})
      set(backend "$ENV{AOTI_SHIM_AGAINST}")
    endif()
    foreach(against IN LISTS backend)
      list(APPEND args --against "${against}")
    endforeach()
  endif()
  foreach(against IN LISTS given)
    if(NOT against STREQUAL "torch" AND NOT EXISTS "${against}")
      _aoti_shim_snapshot_name(${fn} "${against}")
    endif()
    list(APPEND args --against "${against}")
  endforeach()
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

# The shipped snapshots (the package's checks/snapshots, beside this cmake folder).
set(_AOTI_SHIM_SNAPSHOTS "${CMAKE_CURRENT_LIST_DIR}/../checks/snapshots")

# A FATAL_ERROR unless <name> names a shipped snapshot (torch-2.14.1+cu130, with or without
# .json.gz), as `check --against` and the backend's `against` take it; the CLI resolves the
# name itself (checks/references/reference.py resolve_snapshot_name): this only fails early.
function(_aoti_shim_snapshot_name fn name)
  string(REGEX REPLACE "\\.json\\.gz$" "" bare "${name}")
  if(NOT name MATCHES "/" AND EXISTS "${_AOTI_SHIM_SNAPSHOTS}/${bare}.json.gz")
    return()
  endif()
  file(GLOB shipped RELATIVE "${_AOTI_SHIM_SNAPSHOTS}" "${_AOTI_SHIM_SNAPSHOTS}/*.json.gz")
  list(TRANSFORM shipped REPLACE "\\.json\\.gz$" "")
  list(SORT shipped)
  string(REPLACE ";" ", " shipped "${shipped}")
  if(shipped STREQUAL "")
    set(shipped "none")
  endif()
  message(FATAL_ERROR "${fn}: AGAINST '${name}' is neither 'torch', an existing path, nor a shipped snapshot "
                      "(shipped: ${shipped})")
endfunction()

function(aoti_shim_check target)
  set(fn aoti_shim_check)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "PREFIX" "AGAINST;MODELS")
  _aoti_shim_no_extra_args(${fn} "${ARG_UNPARSED_ARGUMENTS}")
  _aoti_shim_require_shared(${fn} "${target}" "the checker reads shared libraries")
  if("AGAINST" IN_LIST ARG_KEYWORDS_MISSING_VALUES OR "MODELS" IN_LIST ARG_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${fn}: AGAINST and MODELS need at least one value")
  endif()
  _aoti_shim_check_models(${fn} "${target}" "${ARG_MODELS}" model_args)
  _aoti_shim_check_references(${fn} "${ARG_AGAINST}" against_args)
  set(args --shim "$<TARGET_FILE:${target}>" ${model_args} ${against_args})
  # No prefix anywhere is no error here: the checker then infers it from the shims.
  _aoti_shim_resolve_prefix(${fn} "${target}" "${ARGV}" "${ARG_KEYWORDS_MISSING_VALUES}" "${ARG_PREFIX}" prefix
                            FROM_TARGET OPTIONAL)
  if(NOT "${prefix}" STREQUAL "")
    list(APPEND args --prefix "${prefix}")
    # A blob built with another prefix can never bind to these shims: say so now, not after the build.
    foreach(model IN LISTS ARG_MODELS)
      get_target_property(model_prefix "${model}" AOTI_SHIM_SYMBOL_PREFIX)
      if(NOT "${model_prefix}" MATCHES "-NOTFOUND$" AND NOT "${model_prefix}" STREQUAL "${prefix}")
        message(FATAL_ERROR "${fn}: model '${model}' is built with prefix '${model_prefix}', '${target}' with '${prefix}'")
      endif()
    endforeach()
  endif()
  _aoti_shim_cli(${fn} cli)
  if(ARG_MODELS)
    add_dependencies("${target}" ${ARG_MODELS})
    # The check runs after the shim library's link: a rebuilt model relinks it, so the check
    # runs again (it did only when the shim itself changed, and a regressed blob built green).
    foreach(model IN LISTS ARG_MODELS)
      set_property(TARGET "${target}" APPEND PROPERTY LINK_DEPENDS "$<TARGET_FILE:${model}>")
    endforeach()
  endif()
  add_custom_command(TARGET "${target}" POST_BUILD
    COMMAND ${cli} check ${args} --format text --fail-on blocking
    COMMENT "aoti-shim check: ${target}"
    VERBATIM)
endfunction()

cmake_policy(POP)
