// labs/05-data-parallel/data_parallel.cpp — your scatter, gather and DataParallel forward (lab 05;
// the tasks are in lab.hpp).
//
// Check your work:   scripts/lab.sh check 05, from the tinytorch clone (add the --dir you gave to start)
// Chapter: chapters/05-data-parallel.md, sections 5.2-5.6.
// BEGIN REFERENCE ONLY
#ifndef TT_LAB_REFERENCE
#error "labs/05-data-parallel/data_parallel.cpp is the reference solution: a student build must compile the student's copy (scripts/lab.sh start 05)"
#endif
// END REFERENCE ONLY
#include "lab.hpp"

#include <algorithm>

namespace lab05 {

using tinytorch::Device;
using tinytorch::Tensor;

std::vector<int64_t> chunk_sizes(int64_t B, int64_t n) {
  // BEGIN SOLUTION chunk_sizes
  const int64_t c = (B + n - 1) / n;  // rows per chunk
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < B; start += c) sizes.push_back(std::min(c, B - start));
  return sizes;
  // END SOLUTION
}

std::vector<Tensor> scatter(const Tensor& x, const std::vector<Device>& devices) {
  // BEGIN SOLUTION scatter
  TT_CHECK(!devices.empty(), "scatter: expected at least one device");
  TT_CHECK(x.defined() && x.dim() > 0, "scatter: expected a tensor with at least one dimension");
  std::vector<Tensor> chunks;
  int64_t start = 0;
  const std::vector<int64_t> sizes = chunk_sizes(x.size(0), static_cast<int64_t>(devices.size()));
  for (size_t i = 0; i < sizes.size(); ++i) {
    chunks.push_back(x.narrow(0, start, sizes[i]).to(devices[i]));  // a view when on x's device
    start += sizes[i];
  }
  return chunks;
  // END SOLUTION
}

Tensor gather(const std::vector<Tensor>& outputs, Device destination) {
  // BEGIN SOLUTION gather
  TT_CHECK(!outputs.empty(), "gather: expected at least one tensor");
  std::vector<Tensor> parts;
  for (const Tensor& y : outputs) parts.push_back(y.to(destination));
  return tinytorch::cat(parts, 0);
  // END SOLUTION
}

Tensor data_parallel(tinytorch::nn::Module& module, const Tensor& x, const std::vector<Device>& devices) {
  // BEGIN SOLUTION forward
  const std::vector<Tensor> chunks = scatter(x, devices);
  const std::vector<Device> used(devices.begin(), devices.begin() + static_cast<long>(chunks.size()));
  const auto replicas = tinytorch::parallel::replicate(module, used);
  const std::vector<Tensor> outputs = tinytorch::parallel::parallel_apply(replicas, chunks, used);
  return gather(outputs, devices[0]);
  // END SOLUTION
}

}  // namespace lab05
