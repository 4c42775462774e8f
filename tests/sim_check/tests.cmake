# tests/sim_check/tests.cmake — the kernel simulator's checks against planted bugs: ctest sim_check_*
# (labels sim_check, ch10), tests/sim_check/planted_bugs.cpp run through tests/sim_check/expect.sh.
#
# Included by tests/CMakeLists.txt (one scope with it). Each bug class has a case that must be
# reported (the report's kernel name and kind of error are checked) and its fix, which must pass:
#   plain build      memcheck (TINYTORCH_SIM_CHECK=memcheck), racecheck's order comparison
#                    (TINYTORCH_SIM_CHECK=racecheck), synccheck, the hang report
#                    (TINYTORCH_SIM_HANG_SECONDS=1), the stack limit, initcheck; and the whole
#                    simulator suite (every shipped kernel) once more under
#                    memcheck,initcheck,racecheck: ctest test_cuda_sim_suite_checked
#   ThreadSanitizer  racecheck (build-tsan, label threads: scripts/test.sh's TSan stage runs them,
#                    with the simulator suite itself, tests/cuda/tests.cmake).
# The TSan and synccheck cases check the source lines chapter 10.7's table quotes (88, 96/99,
# 145/148): a change to planted_bugs.cpp above them must update the chapter.
# planted_bugs is header-only (it includes only the launcher and the runtime), at -O1 -g so that
# the reports' addr2line hints and ThreadSanitizer's stacks have lines.
add_executable(planted_bugs "${CMAKE_CURRENT_SOURCE_DIR}/sim_check/planted_bugs.cpp")
target_link_libraries(planted_bugs PRIVATE tinytorch::tinytorch tt_test_options)
if(TARGET Threads::Threads)
  target_link_libraries(planted_bugs PRIVATE Threads::Threads)
endif()
target_compile_options(planted_bugs PRIVATE -O1 -g)
set(_tt_expect "${CMAKE_CURRENT_SOURCE_DIR}/sim_check/expect.sh")

# tt_sim_check(<case> <pass|fail> <environment> [ERE...]): ctest sim_check_<case>.
function(tt_sim_check case mode env)
  add_test(NAME sim_check_${case} COMMAND bash "${_tt_expect}" ${mode} $<TARGET_FILE:planted_bugs> ${case} ${ARGN})
  set(labels "sim_check;ch10")
  if(TINYTORCH_SANITIZER MATCHES "thread")
    list(APPEND labels threads)
  endif()
  set_tests_properties(sim_check_${case} PROPERTIES TIMEOUT 60 LABELS "${labels}"
                       ENVIRONMENT "${env};TINYTORCH_SIM_HANG_SECONDS=20")
endfunction()

if(TINYTORCH_SANITIZER MATCHES "thread")
  list(APPEND _tt_thread_tests planted_bugs)
  add_dependencies(tt_thread_tests planted_bugs)
  set(_tsan "TSAN_OPTIONS=exitcode=66")
  tt_sim_check(histogram fail "${_tsan}" "WARNING: ThreadSanitizer: data race" "histogram_kernel .*planted_bugs.cpp:88"
               "'block \\(0,0,0\\) thread \\([0-9]+,0,0\\) of histogram'"
               "tinytorch CUDA simulator: reported in kernel 'histogram', block \\(0,0,0\\)")
  tt_sim_check(histogram_fixed pass "${_tsan}")
  tt_sim_check(shared_race fail "${_tsan}" "WARNING: ThreadSanitizer: data race" "block_sum_kernel .*planted_bugs.cpp:96" "block_sum_kernel .*planted_bugs.cpp:99"
               "reported in kernel 'block_sum'")
  tt_sim_check(shared_race_fixed pass "${_tsan}")
  tt_sim_check(warp_sync fail "${_tsan}" "WARNING: ThreadSanitizer: data race" "warp_sum_kernel .*planted_bugs.cpp:"
               "reported in kernel 'warp_sum'")
  tt_sim_check(warp_sync_fixed pass "${_tsan}")
elseif(NOT TINYTORCH_SANITIZER)
  set(_mem "TINYTORCH_SIM_CHECK=memcheck")
  tt_sim_check(oob_write fail "${_mem}"
               "kernel 'fill': block \\(0,0,0\\), thread \\(32,0,0\\): memcheck: invalid write at address 0x[0-9a-f]+: the address is 0 bytes past the end of a live 128-byte allocation at 0x[0-9a-f]+ on cuda:0"
               "addr2line -Cfie ")
  tt_sim_check(oob_write_fixed pass "${_mem}")
  tt_sim_check(oob_write_short fail "${_mem}"
               "kernel 'fill' .*memcheck: invalid global write past the end of a 124-byte allocation .*: bytes 0..3 past its end were changed")
  tt_sim_check(oob_read fail "${_mem}"
               "kernel 'copy': block \\(1,0,0\\), thread \\(0,0,0\\): memcheck: invalid read at address 0x[0-9a-f]+: the address is 0 bytes past the end of a live 256-byte allocation")
  tt_sim_check(oob_read_fixed pass "${_mem}")
  tt_sim_check(use_after_free fail "${_mem}" "kernel 'scale' .*argument 1 = 0x[0-9a-f]+ .*freed 256-byte allocation .*\\(use after free\\)")
  tt_sim_check(use_after_free_fixed pass "${_mem}")
  tt_sim_check(host_pointer fail "${_mem}" "kernel 'scale' .*memcheck: argument 1 = 0x[0-9a-f]+ is not simulated device memory: a host pointer")
  tt_sim_check(host_pointer_fixed pass "${_mem}")
  tt_sim_check(other_device fail "${_mem}" "kernel 'add' .*argument 2 is memory of cuda:1 but argument 1 of cuda:0")
  tt_sim_check(other_device_fixed pass "${_mem}")
  tt_sim_check(misaligned fail "${_mem}" "kernel 'vec4' .*argument 1 = 0x[0-9a-f]+ is not aligned to 16 bytes")
  tt_sim_check(misaligned_fixed pass "${_mem}")
  tt_sim_check(oob_write_before fail "${_mem}" "kernel 'before' .*memcheck: invalid global write before the start of a 124-byte allocation .*: byte 4 before it was changed")
  tt_sim_check(opaque_pointers_fixed pass "TINYTORCH_SIM_CHECK=memcheck,initcheck,racecheck")
  # 2^36 floats past the allocation: a page fault, or (ASLR) a non-canonical address whose
  # general-protection fault has no address or direction.
  tt_sim_check(far_access fail "${_mem}"
               "kernel 'far': block \\(0,0,0\\), thread \\(0,0,0\\): memcheck: invalid (write|access).* at address 0x[0-9a-f]+: the address is in no simulated device allocation")
  # A fault is a tinytorch::Error like any other launch error: caught, and the next launch runs.
  tt_sim_check(fault_recovers_fixed pass "${_mem}")
  set(_race "TINYTORCH_SIM_CHECK=racecheck")  # every launch twice, the second in reverse order
  tt_sim_check(inter_block fail "${_race}" "kernel 'neighbour' .*racecheck: the result depends on the order the threads run in: byte [0-9]+ of the 512-byte allocation")
  tt_sim_check(inter_block_fixed pass "${_race}")
  tt_sim_check(shared_race_order fail "${_race}" "kernel 'block_sum' .*racecheck: the result depends on the order")
  tt_sim_check(order_fixed pass "${_race}")
  tt_sim_check(compact_fixed pass "${_race}")
  tt_sim_check(racecheck_host_pointer fail "${_race}" "kernel 'scale' .*racecheck: argument 1 = 0x[0-9a-f]+ is not simulated device memory")
  tt_sim_check(divergent_barrier fail "" "kernel 'divergent': block \\(0,0,0\\): synccheck: divergent __syncthreads\\(\\): thread \\(0,0,0\\) waits at .*planted_bugs.cpp:145 but thread \\(32,0,0\\) at .*planted_bugs.cpp:148")
  tt_sim_check(divergent_barrier_fixed pass "")
  tt_sim_check(early_exit_fixed pass "")
  set(_init "TINYTORCH_SIM_CHECK=initcheck")  # every launch twice, memory never written changed
  tt_sim_check(uninitialized fail "${_init}" "kernel 'sum' .*initcheck: the kernel read memory never written: the 64 unwritten bytes \\(offsets 0..63\\) of the 64-byte allocation at 0x[0-9a-f]+; what it wrote depends on it: byte 0 of the 4-byte allocation .*, written by block \\(0,0,0\\), thread \\(0,0,0\\)")
  tt_sim_check(uninitialized_partial fail "${_init}" "kernel 'sum' .*initcheck: the kernel read memory never written: the 16 unwritten bytes \\(offsets 48..63\\) of the 64-byte allocation")
  tt_sim_check(uninitialized_fixed pass "${_init}")
  tt_sim_check(uninitialized_shared fail "${_init}" "kernel 'dyn_shared' .*initcheck: the kernel read memory never written: shared memory \\(its __shared__ arrays or TT_DYNAMIC_SHARED\\)")
  tt_sim_check(uninitialized_shared_fixed pass "${_init}")
  # The reduction without __syncthreads: thread 0 reads s[64] before thread 64 wrote it (shared
  # memory is refilled for every block, so the previous block's values do not hide it).
  tt_sim_check(shared_race_initcheck fail "${_init}" "kernel 'block_sum' .*initcheck: the kernel read memory never written: shared memory")
  tt_sim_check(warp_sync_initcheck fail "${_init}" "kernel 'warp_sum' .*initcheck: the kernel read memory never written: shared memory")
  tt_sim_check(order_initcheck_fixed pass "${_init}")
  tt_sim_check(spin_wait fail "" "hang: kernel 'spin', block \\(0,0,0\\), thread \\(0,0,0\\) has run for 1 s without reaching")
  set_property(TEST sim_check_spin_wait APPEND PROPERTY ENVIRONMENT "TINYTORCH_SIM_HANG_SECONDS=1")
  tt_sim_check(spin_wait_fixed pass "")
  tt_sim_check(stack_overflow fail "" "kernel 'big_local': block \\(0,0,0\\), thread \\(0,0,0\\): stack overflow: the thread's stack \\(local memory\\) of 128 KiB is exhausted")
  tt_sim_check(stack_overflow_fixed pass "TINYTORCH_SIM_STACK_KB=256")
  tt_sim_check(static_shared fail "" "kernel 'big_shared' .*its static __shared__ arrays take 65536 bytes, more than the 49152 a kernel may declare.*uses too much shared data \\(0x10000 bytes, 0xc000 max\\)")
  tt_sim_check(static_shared_dynamic fail "" "kernel 'big_shared' .*invalid argument \\(32768 bytes of static __shared__ arrays plus 32768 of dynamic shared memory is above the 49152")
  tt_sim_check(static_shared_fixed pass "")
endif()

# Every shipped kernel under memcheck, initcheck and racecheck (the order comparison): the whole
# simulator suite once more.
if(NOT TINYTORCH_SANITIZER AND TARGET test_cuda_sim_suite)
  add_test(NAME test_cuda_sim_suite_checked COMMAND test_cuda_sim_suite)
  set_tests_properties(test_cuda_sim_suite_checked PROPERTIES
    TIMEOUT ${TT_UNIT_TIMEOUT}
    LABELS "cuda_sim;sim_check"
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
    ENVIRONMENT "${TT_TEST_ENV};TINYTORCH_SIM_CHECK=memcheck,initcheck,racecheck")
endif()
