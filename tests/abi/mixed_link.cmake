# tests/abi/mixed_link.cmake — ctest abi_mixed_link_<mode>: TUs of two build modes must not link.
#
#   cmake -DCXX=g++ -DSOURCE_DIR=<repo> -DEIGEN_INCLUDE_DIR=/usr/include/eigen3 -DWORK_DIR=<dir>
#         -DLIB_MODE=sim|cuda [-DNVCC=/usr/local/cuda/bin/nvcc -DCUDA_ARCH=90]
#         -P tests/abi/mixed_link.cmake
# Every tinytorch declaration lives in an inline namespace named after the build mode
# (core/config.hpp: cpu_abi for g++/clang++, sim_abi with TINYTORCH_CUDA_SIM=1, cuda_abi under
# nvcc). Steps, each in WORK_DIR:
#   1. control: probe_main.cpp and probe_lib.cpp both compiled for the CPU link, and the program
#      runs and prints "abi_probe: 0" (so a failure below is the namespace, not a broken setup);
#   2. probe_lib.cpp compiled in LIB_MODE (sim: <CXX> -DTINYTORCH_CUDA_SIM=1; cuda: <NVCC> -x cu),
#      linked with the CPU probe_main.o (by NVCC for cuda, which adds the CUDA runtime): the link
#      must FAIL, with an undefined reference to abi_probe(tinytorch::cpu_abi::Tensor const&);
#   3. sim only: the reverse (a sim main, the CPU library): undefined reference naming sim_abi.
# Any other outcome (links, or fails for another reason) fails the test with the linker's output.
# Reference: design/CUDA.md §0.1 and §2 (ODR: without the namespace such a program links and runs
# one mode's inline function bodies in the other).
foreach(var CXX SOURCE_DIR EIGEN_INCLUDE_DIR WORK_DIR LIB_MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "mixed_link.cmake: -D${var}=... is required")
  endif()
endforeach()
if(LIB_MODE STREQUAL "cuda" AND NOT DEFINED NVCC)
  message(FATAL_ERROR "mixed_link.cmake: LIB_MODE=cuda needs -DNVCC=...")
endif()
if(NOT DEFINED CUDA_ARCH)
  set(CUDA_ARCH 90)
endif()
file(MAKE_DIRECTORY "${WORK_DIR}")
set(_abi "${SOURCE_DIR}/tests/abi")
set(_inc -I "${SOURCE_DIR}/include" -I "${EIGEN_INCLUDE_DIR}")

# run(<what> <expect: ok|fail> <out-var> COMMAND...): runs it in WORK_DIR; stops the test unless
# it succeeded (ok) or failed (fail) as expected; stores stdout+stderr in <out-var>.
function(run what expect out_var)
  list(JOIN ARGN " " _cmd)
  message(STATUS "${what}: ${_cmd}")
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(expect STREQUAL "ok" AND NOT _rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${_rc}):\n${_out}")
  elseif(expect STREQUAL "fail" AND _rc EQUAL 0)
    message(FATAL_ERROR "${what} succeeded, but TUs of two build modes must not link:\n${_out}")
  endif()
  set(${out_var} "${_out}" PARENT_SCOPE)
endfunction()

# expect_undefined(<link output> <mode>): the linker must name abi_probe with <mode>_abi::Tensor.
function(expect_undefined out mode)
  # GNU ld: undefined reference to `f(...)'; lld: undefined symbol: f(...)
  if(NOT out MATCHES "(undefined reference to [`']|undefined symbol: )abi_probe\\(tinytorch::${mode}_abi::Tensor const&\\)")
    message(FATAL_ERROR "the link failed, but not with an undefined reference to "
                        "abi_probe(tinytorch::${mode}_abi::Tensor const&):\n${out}")
  endif()
  message(STATUS "link failed as it must: undefined reference to abi_probe(tinytorch::${mode}_abi::Tensor const&)")
endfunction()

set(_cxx "${CXX}" -std=c++17 -O0 ${_inc})
run("compile probe_main.cpp (CPU)" ok _o ${_cxx} -c "${_abi}/probe_main.cpp" -o main_cpu.o)
run("compile probe_lib.cpp (CPU)" ok _o ${_cxx} -c "${_abi}/probe_lib.cpp" -o lib_cpu.o)
run("control: link CPU + CPU" ok _o "${CXX}" main_cpu.o lib_cpu.o -o probe_cpu)
run("control: run it" ok _o "${WORK_DIR}/probe_cpu")
if(NOT _o MATCHES "abi_probe: 0")
  message(FATAL_ERROR "probe_cpu printed '${_o}', expected 'abi_probe: 0'")
endif()

if(LIB_MODE STREQUAL "sim")
  run("compile probe_lib.cpp (simulator)" ok _o ${_cxx} -DTINYTORCH_CUDA_SIM=1 -c "${_abi}/probe_lib.cpp" -o lib_sim.o)
  run("link CPU main + simulator lib" fail _o "${CXX}" main_cpu.o lib_sim.o -o probe_mixed)
  expect_undefined("${_o}" cpu)
  run("compile probe_main.cpp (simulator)" ok _o ${_cxx} -DTINYTORCH_CUDA_SIM=1 -c "${_abi}/probe_main.cpp" -o main_sim.o)
  run("link simulator main + CPU lib" fail _o "${CXX}" main_sim.o lib_cpu.o -o probe_mixed)
  expect_undefined("${_o}" sim)
elseif(LIB_MODE STREQUAL "cuda")
  run("compile probe_lib.cpp (nvcc)" ok _o "${NVCC}" -std=c++17 -O0 -arch=sm_${CUDA_ARCH}
      --expt-relaxed-constexpr -DEIGEN_NO_CUDA ${_inc} -x cu -c "${_abi}/probe_lib.cpp" -o lib_cuda.o)
  run("link CPU main + nvcc lib" fail _o "${NVCC}" -arch=sm_${CUDA_ARCH} main_cpu.o lib_cuda.o -o probe_mixed)
  expect_undefined("${_o}" cpu)
  # and the nvcc object does define the cuda_abi symbol (so the mismatch is the namespace)
  run("list lib_cuda.o's symbols" ok _o nm -C lib_cuda.o)
  if(NOT _o MATCHES "T abi_probe\\(tinytorch::cuda_abi::Tensor const&\\)")
    message(FATAL_ERROR "lib_cuda.o does not define abi_probe(tinytorch::cuda_abi::Tensor const&):\n${_o}")
  endif()
  message(STATUS "lib_cuda.o defines abi_probe(tinytorch::cuda_abi::Tensor const&)")
else()
  message(FATAL_ERROR "mixed_link.cmake: LIB_MODE must be sim or cuda, not '${LIB_MODE}'")
endif()
message(STATUS "mixed link: OK")
