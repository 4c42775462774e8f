// bench/libtorch_common.hpp — what the benches against libtorch (bench_vs_libtorch,
// bench_gpt_libtorch) share:
//   set_threads(n)                      tinytorch's, ATen's (OpenMP) and OpenBLAS's thread counts,
//                                       all n (torch::set_num_threads leaves OpenBLAS's own pool
//                                       at its default; OpenBLAS is found with dlsym, if loaded)
//   initialize(argc, argv, defaults)    benchmark::Initialize with `defaults` before the command
//                                       line's flags (a later flag wins); false, after Google
//                                       Benchmark's message, for an unrecognised argument
// Only for benches built with libtorch (bench/CMakeLists.txt: bench_*_libtorch*).
#pragma once

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include <tinytorch/tinytorch.hpp>

namespace bench {

inline void set_threads(int n) {
  tinytorch::set_num_threads(n);
  torch::set_num_threads(n);
  using SetFn = void (*)(int);
  static SetFn openblas = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (openblas) openblas(n);
}

inline bool initialize(int argc, char** argv, std::vector<std::string> defaults) {
  std::vector<char*> args{argv[0]};
  for (std::string& d : defaults) args.push_back(d.data());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  return !benchmark::ReportUnrecognizedArguments(n, args.data());
}

}  // namespace bench
