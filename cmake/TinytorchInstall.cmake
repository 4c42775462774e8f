# cmake/TinytorchInstall.cmake — `cmake --install` rules and the find_package() config.
#
# Installs
#   <prefix>/include/tinytorch/**                      the headers (*.hpp, *.cuh, *.h)
#   <prefix>/share/cmake/tinytorch/
#     tinytorchConfig.cmake, tinytorchConfigVersion.cmake
#     tinytorchTargets.cmake      tinytorch::tinytorch
#     tinytorchMPITargets.cmake   tinytorch::mpi (only when this build found MPI)
#   <prefix>/share/tinytorch/tinytorch.cpp, .cu       src/: tinytorchConfig.cmake makes tinytorch::compiled,
#                                                      compiled_sim and compiled_cuda of them in the
#                                                      consumer's build
# The package is header-only (tinytorch::compiled is compiled by its user, with the user's
# compiler and flags), so the config lives under share/ and is architecture independent.
# Consumers:  find_package(tinytorch 0.1 REQUIRED)                 -> tinytorch::tinytorch, tinytorch::compiled,
#                                                                     compiled_sim (and compiled_cuda with CUDA)
#             find_package(tinytorch 0.1 REQUIRED COMPONENTS mpi)  -> also tinytorch::mpi (required)
# tinytorch::mpi is kept in its own export file so that a consumer without MPI still gets
# tinytorch::tinytorch instead of a failed find_package.
include(CMakePackageConfigHelpers)

set(TINYTORCH_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/tinytorch"
    CACHE STRING "Where tinytorchConfig.cmake is installed, relative to the prefix")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.ipp" PATTERN "*.cuh" PATTERN "*.h")

install(TARGETS tinytorch EXPORT tinytorchTargets)
set(TINYTORCH_INSTALL_SRCDIR "${CMAKE_INSTALL_DATADIR}/tinytorch")
install(FILES "${PROJECT_SOURCE_DIR}/src/tinytorch.cpp" "${PROJECT_SOURCE_DIR}/src/tinytorch.cu"
        DESTINATION "${TINYTORCH_INSTALL_SRCDIR}")
install(EXPORT tinytorchTargets
        NAMESPACE tinytorch::
        DESTINATION "${TINYTORCH_INSTALL_CMAKEDIR}")

set(TINYTORCH_EXPORT_MPI OFF)
if(TARGET tinytorch_mpi)
  set(TINYTORCH_EXPORT_MPI ON)
  install(TARGETS tinytorch_mpi EXPORT tinytorchMPITargets)
  install(EXPORT tinytorchMPITargets
          NAMESPACE tinytorch::
          DESTINATION "${TINYTORCH_INSTALL_CMAKEDIR}")
endif()

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/tinytorchConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/tinytorchConfig.cmake"
  INSTALL_DESTINATION "${TINYTORCH_INSTALL_CMAKEDIR}"
  PATH_VARS TINYTORCH_INSTALL_SRCDIR)
# 0.x: a minor bump may break the API, so only the same minor version is compatible.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/tinytorchConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion
  ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/tinytorchConfig.cmake"
              "${PROJECT_BINARY_DIR}/tinytorchConfigVersion.cmake"
        DESTINATION "${TINYTORCH_INSTALL_CMAKEDIR}")
