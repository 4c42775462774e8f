# tests/mpi/tests.cmake — the MPI tests (tests/mpi/test_*.cpp on 2, 3 or 4 ranks), the failure
# tests (a failing rank ends the job) and the many-hosts test (network namespaces as hosts).
#
# Included by tests/CMakeLists.txt (include(), one scope: CMAKE_CURRENT_SOURCE_DIR is tests/);
# the shared helpers are cmake/TinytorchTesting.cmake.

# ---- MPI tests: tests/mpi/test_*.cpp, run on 2, 3 and 4 ranks -------------------------------
# With TINYTORCH_DISTRIBUTED_DEBUG=DETAIL: every collective is first agreed across the ranks
# (process_group.hpp), so a test that calls collectives out of step fails with a message.
# Each world size runs in one build, where it finds its bugs: 2 ranks under AddressSanitizer and
# UBSan (TINYTORCH_SANITIZER=address...: scripts/test.sh's build-asan; a memory error shows on any
# world size, and the sanitizer slows each run 3-10x), 3 and 4 ranks in the other builds (uneven
# shards and buckets, 4 ranks oversubscribed on 2 cores). TT_MPI_TEST_RANKS overrides the list.
if(TINYTORCH_SANITIZER MATCHES "address|undefined")
  set(_tt_mpi_ranks_default 2)
else()
  set(_tt_mpi_ranks_default 3 4)
endif()
set(TT_MPI_TEST_RANKS "${_tt_mpi_ranks_default}" CACHE STRING "World sizes the MPI tests run on in this build (default: 2 under ASan, else 3;4)")
if(TINYTORCH_HAVE_MPI)
  file(GLOB TT_MPI_TEST_SOURCES CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_*.cpp")
  list(SORT TT_MPI_TEST_SOURCES)
  foreach(src IN LISTS TT_MPI_TEST_SOURCES)
    get_filename_component(name "${src}" NAME_WE)
    # distributed/ is compiled here (header-only); the rest of the library comes compiled once
    # (at -O1 under ASan: top-level CMakeLists.txt).
    if(name MATCHES "_sim$")
      # A kernel-simulator build (defines TINYTORCH_CUDA_SIM: sim_abi): the simulator's library.
      tt_add_test_executable(${name} "${src}" tt_catch_mpi_main tinytorch::mpi tinytorch::compiled_sim)
    else()
      tt_add_test_executable(${name} "${src}" tt_catch_mpi_main tinytorch::mpi tinytorch::compiled)
    endif()
    if(NOT ${name}_BUILT)
      list(APPEND _tt_not_built ${name})
      continue()
    endif()
    foreach(np IN LISTS TT_MPI_TEST_RANKS)
      add_test(NAME ${name}_np${np}
               COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/mpirun.sh" -np ${np} --tag-output
                       $<TARGET_FILE:${name}>)
      set_tests_properties(${name}_np${np} PROPERTIES
        TIMEOUT ${TT_MPI_TIMEOUT}
        LABELS sanitizer
        WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
        ENVIRONMENT "${TT_TEST_ENV};MPIRUN=${MPIEXEC_EXECUTABLE};TINYTORCH_DISTRIBUTED_DEBUG=DETAIL;${TT_SANITIZER_MPI_ENV}")
      # More ranks than 2 cores: nothing beside it. 2 ranks: ctest's lock "mpirun" (chapters/
      # CMakeLists.txt), so that a single-process test may run beside it, another mpirun not.
      if(np GREATER 2)
        set_tests_properties(${name}_np${np} PROPERTIES RUN_SERIAL TRUE)
      else()
        set_tests_properties(${name}_np${np} PROPERTIES RESOURCE_LOCK mpirun)
      endif()
      tt_add_chapter_labels(${name}_np${np} "${src}")
    endforeach()
    list(APPEND _tt_sanitizer_tests ${name})
  endforeach()
endif()

# ---- MPI failure tests: a failing rank must end the whole job (no hang) --------------------
# tests/mpi/<p>failure_test.sh drives the program tests/mpi/<p>failing_rank.cpp (own main, no
# Catch2) through scripts/mpirun.sh in several failure modes. Registered as ctest
# mpi_<p>failure (e.g. mpi_failure, mpi_ddp_failure), running
#   bash tests/mpi/<p>failure_test.sh build/bin/<p>failing_rank 2 [build/bin/<p>failing_rank_nompi]
# The third argument (the same program built without MPI, linked with tinytorch::tinytorch only)
# is built and passed when the script's usage line mentions a "no-MPI binary".
if(TINYTORCH_HAVE_MPI)
  file(GLOB TT_MPI_FAILURE_SCRIPTS CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/mpi/*failure_test.sh")
  list(SORT TT_MPI_FAILURE_SCRIPTS)
  foreach(script IN LISTS TT_MPI_FAILURE_SCRIPTS)
    get_filename_component(_script_name "${script}" NAME)
    string(REGEX REPLACE "failure_test\\.sh$" "" _prefix "${_script_name}")
    set(_prog "${_prefix}failing_rank")
    set(_prog_src "${CMAKE_CURRENT_SOURCE_DIR}/mpi/${_prog}.cpp")
    if(NOT EXISTS "${_prog_src}")
      message(STATUS "tinytorch: ${_script_name} has no ${_prog}.cpp next to it; not registered")
      continue()
    endif()
    add_executable(${_prog} "${_prog_src}")
    target_link_libraries(${_prog} PRIVATE tinytorch::mpi tinytorch::compiled tt_test_options)
    set(_args $<TARGET_FILE:${_prog}> 2)
    file(STRINGS "${script}" _wants_nompi REGEX "no-MPI binary")
    if(_wants_nompi)
      add_executable(${_prog}_nompi "${_prog_src}")
      target_link_libraries(${_prog}_nompi PRIVATE tinytorch::compiled tt_test_options)
      list(APPEND _args $<TARGET_FILE:${_prog}_nompi>)
    endif()
    set(_test "mpi_${_prefix}failure")
    add_test(NAME ${_test} COMMAND bash "${script}" ${_args})
    # Not RUN_SERIAL, unlike the other MPI tests: these jobs mostly wait for a timeout to fire
    # (mpi_hang_failure: 12 s of CPU in 28 s on 2 cores), so one other test may run beside them;
    # their limits (20 s a mode, 3 s timeouts) leave room for it.
    set_tests_properties(${_test} PROPERTIES
      TIMEOUT 300
      WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
      ENVIRONMENT "${TT_TEST_ENV};MPIRUN=${MPIEXEC_EXECUTABLE}")
  endforeach()
endif()

# ---- Many hosts: network namespaces as hosts, mpirun -H over TCP (root only) ---------------
# ctest mpi_multihost runs `bash tests/mpi/multihost_test.sh build/bin/train_mnist 2`: two network
# namespaces joined by a veth pair act as two hosts; train_mnist across them must save the same
# checkpoint as on one host, and a killed rank or a cut link must end every rank within 60 s.
# Not root, no network namespaces or no Fashion-MNIST: exit 77, reported as Skipped. About 40 s,
# 11 s of it CPU (the rest waits for timeouts and TCP), so not RUN_SERIAL: one other test may run
# beside it. The script's own time limits (at most about 330 s in all) stay under TIMEOUT, so that
# its trap always removes the namespaces (ctest kills a test that times out without running its
# traps).
# train_mnist is built by examples/ (added after this directory: no if(TARGET) here).
if(TINYTORCH_HAVE_MPI AND TINYTORCH_BUILD_EXAMPLES)
  add_test(NAME mpi_multihost
           COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/mpi/multihost_test.sh" $<TARGET_FILE:train_mnist> 2)
  set_tests_properties(mpi_multihost PROPERTIES
    TIMEOUT 420
    SKIP_RETURN_CODE 77
    LABELS "ch06"
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
    ENVIRONMENT "${TT_TEST_ENV};MPIRUN=${MPIEXEC_EXECUTABLE}")
endif()
