# tests/gdb/sim_session.gdb — chapter 10's gdb session: one GPU thread of the tiled matmul, stepped in the
# kernel simulator. Used by ctest gdb_sim_kernel (tests/gdb/run_gdb_sim_test.sh), which checks its output:
#   gdb -batch -nx -x tests/gdb/sim_session.gdb build/bin/gdb_sim_demo
# Thread (5, 0) of block (1, 0) owns C[0, 37]. Name every coordinate in the condition: threadIdx.x == 5
# alone matches the 32 threads (5, 0..31) of the block, and gdb would stop in each of them in turn.
break gemm_tiled_kernel<float, 32> if threadIdx.x == 5 && threadIdx.y == 0 && blockIdx.x == 1 && blockIdx.y == 0
run
print threadIdx
print blockIdx
next 4
print row
print col
next 6
print As[0][5]
print Bs[0][5]
next
print Bs[0][5]
next 3
print acc
until 125
print acc
next
print C[row * ldc + col]
kill
