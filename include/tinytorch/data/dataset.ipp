// tinytorch/data/dataset.ipp — the bodies of dataset.hpp that need the library's internals: TensorDataset::gather_rows.
//
// Not a header to include: dataset.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in dataset.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include "tinytorch/data/dataset.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace data {

TT_DECL Tensor TensorDataset::gather_rows(const Tensor& src, const std::vector<int64_t>& rows) {
  const int64_t n = src.size(0);  // src has at least one dimension (the constructors check)
  Shape shape = src.sizes();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out = ops::make_tensor(shape, src.dtype());
  const size_t row_bytes = n > 0 ? static_cast<size_t>(src.numel() / n) * element_size(src.dtype()) : 0;
  if (row_bytes == 0 || rows.empty()) return out;  // e.g. shape (N, 0): nothing to copy
  const char* in = static_cast<const char*>(src.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t b = 0; b < rows.size(); ++b)
    std::memcpy(dst + b * row_bytes, in + static_cast<size_t>(rows[b]) * row_bytes, row_bytes);
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::data
