# include(AotiShim): the same functions as find_package(AotiShim CONFIG), for
# projects that receive this folder on CMAKE_MODULE_PATH (scikit-build-core's
# cmake.module entry point).
include("${CMAKE_CURRENT_LIST_DIR}/AotiShimConfig.cmake")
