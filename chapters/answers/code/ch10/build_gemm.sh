# ch10 exercises 2, 3 and 5: builds tests/cuda/test_cuda_gemm.cpp for the CUDA simulator against a changed include/.
# Run it from the root of a scratch copy of the repository with chapters/answers/code/include-<variant>.patch
# applied (patch -p1 < ...); variant nosync2 (exercise 2) or nopad (exercise 3); for k5 (exercise 5) apply
# tt.patch as well, which adds the kernel-5 test case. Binaries go to /tmp.
# usage: bash build_gemm.sh <variant>        (nosync2 also gets a -fsanitize=thread build, ..._tsan)
v=${1:?variant: nosync2, nopad or k5}
nice -n 10 g++ -std=c++17 -O1 -g -DTINYTORCH_CUDA_SIM=1 -Iinclude -I. -Itests/cuda -I/usr/include/eigen3 \
  tests/cuda/test_cuda_gemm.cpp tests/catch_main.cpp -o /tmp/test_cuda_gemm_$v -lz -lpthread 2>&1 | grep -m5 -E "error|fatal"
echo "built $v rc=${PIPESTATUS[0]}"
if [ "$v" = nosync2 ]; then
  nice -n 10 g++ -std=c++17 -O1 -g -fsanitize=thread -DTINYTORCH_CUDA_SIM=1 -Iinclude -I. -Itests/cuda -I/usr/include/eigen3 \
    tests/cuda/test_cuda_gemm.cpp tests/catch_main.cpp -o /tmp/test_cuda_gemm_nosync2_tsan -lz -lpthread 2>&1 | grep -m5 -E "error|fatal"
  echo "built tsan rc=${PIPESTATUS[0]}"
fi
