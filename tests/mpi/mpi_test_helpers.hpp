// tests/mpi/mpi_test_helpers.hpp — what the MPI test files share (test_ddp.cpp, test_zero.cpp):
//   ensure_group()      init_process_group(Backend::MPI) once per process (Catch2 runs every case
//                       in one process; tests/mpi/mpi_main.cpp destroys the group at exit)
//   make_mlp({a, b, c}) Linear(a, b) - ReLU - Linear(b, c): Linear layers with ReLU between
#pragma once

#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace mpi_test {

inline void ensure_group() {
  namespace dist = tinytorch::distributed;
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
}

inline std::shared_ptr<tinytorch::nn::Sequential> make_mlp(const std::vector<int64_t>& sizes) {
  namespace nn = tinytorch::nn;
  auto m = std::make_shared<nn::Sequential>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    m->push_back(std::make_shared<nn::Linear>(sizes[i], sizes[i + 1]));
    if (i + 2 < sizes.size()) m->push_back(std::make_shared<nn::ReLU>());
  }
  return m;
}

}  // namespace mpi_test
