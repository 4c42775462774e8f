# cmake/TinytorchTesting.cmake — what every test area of tests/ shares, included once by
# tests/CMakeLists.txt before the areas (include(), not add_subdirectory(): one scope, so
# CMAKE_CURRENT_SOURCE_DIR is tests/ here and in every tests/<area>/tests.cmake).
#
#   TT_SANITIZER_ENV, TT_SANITIZER_MPI_ENV   the environment of tests in a sanitizer build
#   TT_TIMEOUT_SCALE, TT_UNIT_TIMEOUT, TT_MPI_TIMEOUT   timeouts (x3 under a sanitizer)
#   _tt_sanitizer_tests                      executables the sanitizer stage builds (each area
#                                            appends to it; tests/CMakeLists.txt makes the target)
#   tt_file_filter_command(suite name out)   the command that runs one file's cases of a suite
#   tt_test_options                          INTERFACE target: options of every test executable
#   tt_has_own_main(src out)                 does `src` define main()?
#   tt_add_test_executable(name src main libs...)   a test executable with the shared Catch2 main
#   TT_DEBIAN_PYTHON                         /usr/bin/python3 when it exists (Debian's numpy,
#                                            matplotlib, selenium live there), else python3 on PATH;
#                                            docs_site and the chapter checks run with it
# It also sets -O2 for Release in tests/ (the rest of the build keeps -O3).

# ---- the interpreter of the Python-driven tests (docs/, chapters/) -----------------------------
# Debian's python3-selenium, -matplotlib and -numpy live in /usr/bin/python3's site-packages: prefer
# that interpreter over another python3 on PATH (pyenv, a venv).
find_program(TT_DEBIAN_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT TT_DEBIAN_PYTHON)
  find_program(TT_DEBIAN_PYTHON NAMES python3)
endif()

# ---- sanitizer settings (used by build-asan; harmless in other builds) ------------------------
# Any AddressSanitizer, LeakSanitizer or UndefinedBehaviorSanitizer report ends the program with a
# non-zero status, so the test fails (the code is also built with -fno-sanitize-recover=all).
# allocator_may_return_null=1: an impossible allocation returns null, so tinytorch's own
# out-of-memory error is tested (test_allocator asks for 2^62 bytes) instead of ASan aborting.
# MPI ranks (TT_SANITIZER_MPI_ENV) inherit these from mpirun, plus:
#   fast_unwind_on_malloc=0  Open MPI's libraries have no frame pointers: only the slow unwinder
#                            sees a libmpi/libopen-pal frame in every leak stack they cause
#   intercept_tls_get_addr=0 do not track the thread-local storage of dlopen'ed libraries: at exit
#                            LeakSanitizer (clang 14) read a stale range of an Open MPI component
#                            that MPI_Finalize had dlclose'd and crashed ("Tracer caught signal
#                            11", 5 of 6 runs of test_algorithms_np3). tinytorch's thread_locals
#                            live in the executable's static TLS, which is still scanned.
#   suppressions=tests/sanitizers/lsan_mpi.supp  Open MPI's (and hwloc's, libevent's, PMIx's)
#                            never-freed allocations, suppressed by library; leaks whose stack
#                            holds no MPI library are still reported.
set(TT_SANITIZER_ENV
  "ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=1:allocator_may_return_null=1"
  "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
set(TT_SANITIZER_MPI_ENV
  "ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=1:allocator_may_return_null=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0"
  "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
  "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/sanitizers/lsan_mpi.supp:print_suppressions=0")
# Under AddressSanitizer every buffer comes from the system (TINYTORCH_NO_MEMORY_CACHING=1,
# core/allocator.hpp): no block is reused from the caching allocator's free lists and no small
# buffer lives inside its Storage, so ASan sees each use after free and each overflow. Only in a
# build with -DTINYTORCH_SANITIZER=address...: the main build tests the caching path.
if(TINYTORCH_SANITIZER MATCHES "address")
  list(APPEND TT_SANITIZER_ENV "TINYTORCH_NO_MEMORY_CACHING=1")
  list(APPEND TT_SANITIZER_MPI_ENV "TINYTORCH_NO_MEMORY_CACHING=1")
endif()
# Instrumented code runs 2-5x slower: every TIMEOUT in tests/ is multiplied by TT_TIMEOUT_SCALE.
if(TINYTORCH_SANITIZER)
  set(TT_TIMEOUT_SCALE 3)
else()
  set(TT_TIMEOUT_SCALE 1)
endif()
math(EXPR TT_UNIT_TIMEOUT "120 * ${TT_TIMEOUT_SCALE}")
math(EXPR TT_MPI_TIMEOUT "60 * ${TT_TIMEOUT_SCALE}")
set(_tt_sanitizer_tests "")

# Tests are compiled with -O2 in Release (this directory only; the rest of the build keeps -O3):
# fast enough to run, quicker to compile. The unit test files lower it to -O0 (tests/CMakeLists.txt).
string(REGEX REPLACE "-O[0-9s]" "-O2" CMAKE_CXX_FLAGS_RELEASE "${CMAKE_CXX_FLAGS_RELEASE}")

# tt_file_filter_command(<suite> <name> <out-var>): the command that runs only the test cases of
# file <name> from executable <suite>, which holds several test files in one TU
# (test_cuda_sim_suite, test_cuda_nvcc): Catch2's filenames-as-tags, `-# [#<name>]`; --warn NoTests
# makes a filter that matches nothing fail instead of passing with no test run.
function(tt_file_filter_command suite name out_var)
  set(${out_var} ${suite} "-#" "[#${name}]" --warn NoTests PARENT_SCOPE)
endfunction()

# Options shared by every test executable (currently: warnings).
add_library(tt_test_options INTERFACE)
target_link_libraries(tt_test_options INTERFACE tt_warnings)

# tt_add_chapter_labels(<test> <src>): the ctest labels ch01 ... ch13 of the Catch2 tags [ch01] ...
# that `src` uses, so that `ctest -L ch13` (and `scripts/test.sh -L ch13`) runs a chapter's test files.
function(tt_add_chapter_labels test src)
  file(STRINGS "${src}" _tags REGEX "\\[ch[0-9][0-9]\\]")
  string(REGEX MATCHALL "\\[ch[0-9][0-9]\\]" _tags "${_tags}")
  list(REMOVE_DUPLICATES _tags)
  foreach(_t IN LISTS _tags)
    string(REGEX REPLACE "[][]" "" _t "${_t}")
    set_property(TEST ${test} APPEND PROPERTY LABELS ${_t})
  endforeach()
endfunction()

# True when `src` brings its own main() and must not be linked with a shared Catch2 main.
function(tt_has_own_main src out_var)
  file(STRINGS "${src}" _main_lines
       REGEX "CATCH_CONFIG_MAIN|CATCH_CONFIG_RUNNER|^[ \t]*int[ \t]+main[ \t]*\\(")
  if(_main_lines)
    set(${out_var} TRUE PARENT_SCOPE)
  else()
    set(${out_var} FALSE PARENT_SCOPE)
  endif()
endfunction()

# tt_add_test_executable(<name> <source> <shared-main-object-library> <libs>...)
# Creates the executable and sets <name>_BUILT in the caller: FALSE (nothing created) when the
# file needs the shared Catch2 main but Catch2 v2 is missing.
function(tt_add_test_executable name src main_lib)
  tt_has_own_main("${src}" _own_main)
  if(NOT _own_main AND NOT TINYTORCH_HAVE_CATCH2)
    set(${name}_BUILT FALSE PARENT_SCOPE)
    return()
  endif()
  add_executable(${name} "${src}")
  target_link_libraries(${name} PRIVATE ${ARGN} tt_test_options)
  if(NOT _own_main)
    target_link_libraries(${name} PRIVATE ${main_lib})
  endif()
  if(TINYTORCH_HAVE_CATCH2)
    target_link_libraries(${name} PRIVATE Catch2::Catch2)
  endif()
  set(${name}_BUILT TRUE PARENT_SCOPE)
endfunction()
