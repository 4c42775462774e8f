# cmake/TinytorchFeatures.cmake — find the optional features and say what was found.
#
# Included (not called as a function: enable_language must run at directory scope) from the
# top-level CMakeLists.txt. Prints exactly one line per feature or build mode:
#   -- tinytorch: ✓ MPI (Open MPI 4.1.4)
#   -- tinytorch: ✗ nvcc CUDA (TINYTORCH_ENABLE_CUDA=OFF)
# (CUDA as one of three build-mode lines: ✓ CPU, ✓ CUDA simulator (TINYTORCH_CUDA_SIM), ✓/✗ nvcc CUDA (why))
# and sets, for the rest of the build:
#   TINYTORCH_HAVE_CUDA       CUDA language enabled (CMAKE_CUDA_ARCHITECTURES defaults to 90),
#                             CUDA::cudart available
#   TINYTORCH_HAVE_MPI        MPI::MPI_CXX available; MPIEXEC_EXECUTABLE is mpirun
#   TINYTORCH_HAVE_NCCL       imported target tt_nccl (nccl.h + libnccl)
#   TINYTORCH_HAVE_BENCHMARK  benchmark::benchmark
#   TINYTORCH_HAVE_CLI11      tt_cli11 links CLI11 (tt_cli11 always exists, empty without CLI11)
#   TINYTORCH_HAVE_CATCH2     Catch2::Catch2 (Catch2 v2, header <catch2/catch.hpp>)
#   TINYTORCH_HAVE_LIBFUZZER  the compiler links -fsanitize=fuzzer,address,undefined (clang++ with
#                             Debian's libclang-rt-<v>-dev): tests/fuzz builds fuzz_idx, fuzz_checkpoint

function(tt_feature_line found name detail)
  if(found)
    message(STATUS "tinytorch: ✓ ${name} (${detail})")
  else()
    message(STATUS "tinytorch: ✗ ${name} (${detail})")
  endif()
endfunction()

tt_feature_line(TRUE "Eigen3" "${Eigen3_VERSION}")
tt_feature_line(TRUE "zlib" "${ZLIB_VERSION_STRING}")

# ---- CUDA ----------------------------------------------------------------------------------
set(TINYTORCH_HAVE_CUDA OFF)
if(TINYTORCH_ENABLE_CUDA)
  # nvcc installed in the standard place but not on PATH: point CMake at it.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(_tt_nvcc_on_path nvcc NO_DEFAULT_PATH PATHS ENV PATH)  # what check_language sees
    if(NOT _tt_nvcc_on_path AND EXISTS "/usr/local/cuda/bin/nvcc")
      set(CMAKE_CUDA_COMPILER "/usr/local/cuda/bin/nvcc" CACHE FILEPATH "CUDA compiler")
    endif()
    unset(_tt_nvcc_on_path CACHE)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures (90 = Hopper, H100/H200)")
    endif()
    # Shared cudart everywhere: tests' host-compiled mains use CUDA::cudart (shared), and one
    # program must not carry two CUDA runtimes.
    if(NOT DEFINED CMAKE_CUDA_RUNTIME_LIBRARY)
      set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(TINYTORCH_HAVE_CUDA ON)
      set(_tt_nvcc_why "nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm_${CMAKE_CUDA_ARCHITECTURES}")
    else()
      set(_tt_nvcc_why "nvcc found but CUDA toolkit libraries not found")
    endif()
  else()
    set(_tt_nvcc_why "no nvcc found; set CUDACXX or put nvcc on PATH")
  endif()
else()
  set(_tt_nvcc_why "TINYTORCH_ENABLE_CUDA=OFF")
endif()

# ---- build modes: one line each (design/CUDA.md §0) ------------------------------------------
# CPU and the CUDA kernel simulator (g++/clang++ with TINYTORCH_CUDA_SIM=1: tests/cuda/test_cuda_*.cpp
# as <name>_sim) are always built; real CUDA needs nvcc (its line says why not).
tt_feature_line(TRUE "CPU" "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
tt_feature_line(TRUE "CUDA simulator" "TINYTORCH_CUDA_SIM")
tt_feature_line(${TINYTORCH_HAVE_CUDA} "nvcc CUDA" "${_tt_nvcc_why}")
unset(_tt_nvcc_why)

# ---- MPI -----------------------------------------------------------------------------------
set(MPI_DETERMINE_LIBRARY_VERSION TRUE)  # fills MPI_CXX_LIBRARY_VERSION_STRING
find_package(MPI QUIET COMPONENTS CXX)
if(MPI_CXX_FOUND)
  set(TINYTORCH_HAVE_MPI ON)
  # "Open MPI v4.1.4, package: Debian OpenMPI, ..." -> "Open MPI 4.1.4"
  set(_tt_mpi_desc "${MPI_CXX_LIBRARY_VERSION_STRING}")
  if(_tt_mpi_desc MATCHES "^([A-Za-z][A-Za-z ]*[A-Za-z]) v?([0-9]+(\\.[0-9]+)*)")
    set(_tt_mpi_desc "${CMAKE_MATCH_1} ${CMAKE_MATCH_2}")
  elseif(NOT _tt_mpi_desc)
    set(_tt_mpi_desc "MPI ${MPI_CXX_VERSION}")
  endif()
  tt_feature_line(TRUE "MPI" "${_tt_mpi_desc}")
  unset(_tt_mpi_desc)
else()
  set(TINYTORCH_HAVE_MPI OFF)
  tt_feature_line(FALSE "MPI" "no MPI C++ compiler wrapper / libmpi found")
endif()

# ---- NCCL (only meaningful with CUDA) ------------------------------------------------------
set(TINYTORCH_HAVE_NCCL OFF)
if(TINYTORCH_HAVE_CUDA)
  find_path(TINYTORCH_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} "${CUDAToolkit_LIBRARY_ROOT}/include" /usr/local/cuda/include)
  find_library(TINYTORCH_NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR} "${CUDAToolkit_LIBRARY_ROOT}/lib64" "${CUDAToolkit_LIBRARY_ROOT}/lib"
          /usr/local/cuda/lib64 /usr/local/cuda/lib)
  if(TINYTORCH_NCCL_INCLUDE_DIR AND TINYTORCH_NCCL_LIBRARY)
    set(TINYTORCH_HAVE_NCCL ON)
    file(STRINGS "${TINYTORCH_NCCL_INCLUDE_DIR}/nccl.h" _tt_nccl_ver REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
           _tt_nccl_ver "${_tt_nccl_ver}")
    add_library(tt_nccl UNKNOWN IMPORTED)
    set_target_properties(tt_nccl PROPERTIES
      IMPORTED_LOCATION "${TINYTORCH_NCCL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${TINYTORCH_NCCL_INCLUDE_DIR}")
    tt_feature_line(TRUE "NCCL" "${_tt_nccl_ver}, ${TINYTORCH_NCCL_LIBRARY}")
    unset(_tt_nccl_ver)
  else()
    tt_feature_line(FALSE "NCCL" "nccl.h/libnccl not found under the CUDA toolkit")
  endif()
else()
  tt_feature_line(FALSE "NCCL" "needs CUDA")
endif()

# ---- Google Benchmark ----------------------------------------------------------------------
find_package(benchmark QUIET)
if(benchmark_FOUND AND TARGET benchmark::benchmark)
  set(TINYTORCH_HAVE_BENCHMARK ON)
  tt_feature_line(TRUE "Google Benchmark" "${benchmark_VERSION}")
else()
  set(TINYTORCH_HAVE_BENCHMARK OFF)
  tt_feature_line(FALSE "Google Benchmark" "not found; bench/ is skipped (apt install libbenchmark-dev)")
endif()

# ---- CLI11 (examples' command lines) -------------------------------------------------------
add_library(tt_cli11 INTERFACE)
find_package(CLI11 QUIET CONFIG)
if(CLI11_FOUND AND TARGET CLI11::CLI11)
  set(TINYTORCH_HAVE_CLI11 ON)
  target_link_libraries(tt_cli11 INTERFACE CLI11::CLI11)
  tt_feature_line(TRUE "CLI11" "${CLI11_VERSION}")
else()
  find_path(TINYTORCH_CLI11_INCLUDE_DIR CLI/CLI.hpp HINTS /usr/include)
  if(TINYTORCH_CLI11_INCLUDE_DIR)
    set(TINYTORCH_HAVE_CLI11 ON)
    target_include_directories(tt_cli11 SYSTEM INTERFACE "${TINYTORCH_CLI11_INCLUDE_DIR}")
    tt_feature_line(TRUE "CLI11" "header ${TINYTORCH_CLI11_INCLUDE_DIR}/CLI/CLI.hpp")
  else()
    set(TINYTORCH_HAVE_CLI11 OFF)
    tt_feature_line(FALSE "CLI11" "not found; examples that parse options will not build (apt install libcli11-dev)")
  endif()
endif()
if(TINYTORCH_HAVE_CLI11)
  target_compile_definitions(tt_cli11 INTERFACE TT_HAVE_CLI11=1)
endif()

# ---- Catch2 v2 (tests) ---------------------------------------------------------------------
find_package(Catch2 2 QUIET)
if(Catch2_FOUND AND TARGET Catch2::Catch2)
  set(TINYTORCH_HAVE_CATCH2 ON)
  tt_feature_line(TRUE "Catch2" "${Catch2_VERSION}")
else()
  set(TINYTORCH_HAVE_CATCH2 OFF)
  tt_feature_line(FALSE "Catch2" "Catch2 v2 not found; unit tests are skipped (apt install catch2)")
endif()

# ---- libFuzzer (tests/fuzz) ------------------------------------------------------------------
# clang++ plus its runtime libraries (Debian: clang, libclang-rt-14-dev). GCC has no libFuzzer:
# a g++ build only replays tests/fuzz's corpus and regressions (fuzz_*_replay).
set(TINYTORCH_HAVE_LIBFUZZER OFF)
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  tt_feature_line(FALSE "libFuzzer" "needs clang++, the compiler is ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}; scripts/test.sh's build-asan uses clang++")
elseif(TINYTORCH_SANITIZER MATCHES "thread|memory")
  tt_feature_line(FALSE "libFuzzer" "TINYTORCH_SANITIZER=${TINYTORCH_SANITIZER} cannot be combined with address")
else()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles("
#include <cstddef>
#include <cstdint>
extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }" TINYTORCH_LIBFUZZER_LINKS)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_QUIET)
  if(TINYTORCH_LIBFUZZER_LINKS)
    set(TINYTORCH_HAVE_LIBFUZZER ON)
    tt_feature_line(TRUE "libFuzzer" "clang ${CMAKE_CXX_COMPILER_VERSION}: fuzz_idx, fuzz_checkpoint")
  else()
    string(REGEX MATCH "^[0-9]+" _tt_clang_major "${CMAKE_CXX_COMPILER_VERSION}")
    tt_feature_line(FALSE "libFuzzer" "clang++ cannot link -fsanitize=fuzzer (apt install libclang-rt-${_tt_clang_major}-dev)")
    unset(_tt_clang_major)
  endif()
endif()
