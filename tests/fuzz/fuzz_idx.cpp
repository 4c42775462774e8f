// tests/fuzz/fuzz_idx.cpp — fuzz target for the IDX (MNIST) reader, include/tinytorch/data/mnist.hpp.
//
// Each input is written to a scratch file (fuzz_common.hpp) and read with both public readers,
// read_idx_images (magic 2051: float32 (N, rows*cols) = pixel / 255) and read_idx_labels
// (magic 2049: int64 (N)); the file may be plain or gzip (zlib reads both). For any bytes a reader
// must either throw tinytorch::Error or return a tensor that keeps its promises:
//   images  2-D float32, contiguous, every value exactly k / 255.0f for an integer k in 0..255
//   labels  1-D int64, contiguous, every value in 0..255
// Anything else is a finding: a sanitizer report (built with -fsanitize=fuzzer,address,undefined
// under clang, see tests/fuzz/CMakeLists.txt), another exception type (uncaught: abort), a broken
// promise above (abort), a hang or running out of memory.
// Seed corpus: tests/fuzz/corpus/idx (tests/fuzz/gen_corpus.py). Regressions: tests/fuzz/regressions/idx.
// Format reference: yann.lecun.com/exdb/mnist ("FILE FORMATS"); chapters/01-training-loop.md.
#include <cmath>
#include <cstdint>
#include <string>

#include <tinytorch/data/mnist.hpp>

#include "fuzz_common.hpp"

namespace {

void check_images(const tinytorch::Tensor& t) {
  if (t.dim() != 2 || t.dtype() != tinytorch::kFloat32 || !t.is_contiguous())
    tt_fuzz::fail("read_idx_images returned a tensor that is not 2-D contiguous float32");
  const float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = p[i];
    const long k = std::lround(static_cast<double>(v) * 255.0);
    if (!(v >= 0.0f && v <= 1.0f) || k < 0 || k > 255 || static_cast<float>(k) / 255.0f != v)
      tt_fuzz::fail("read_idx_images returned a value that is not k/255: " + std::to_string(v));
  }
}

void check_labels(const tinytorch::Tensor& t) {
  if (t.dim() != 1 || t.dtype() != tinytorch::kInt64 || !t.is_contiguous())
    tt_fuzz::fail("read_idx_labels returned a tensor that is not 1-D contiguous int64");
  const int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] < 0 || p[i] > 255) tt_fuzz::fail("read_idx_labels returned label " + std::to_string(p[i]));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = tt_fuzz::scratch_path("idx");
  static const tt_fuzz::RemoveAtExit cleanup{{path}};
  tt_fuzz::write_file(path, data, size);
  try {
    check_images(tinytorch::data::read_idx_images(path));
  } catch (const tinytorch::Error&) {
  }
  try {
    check_labels(tinytorch::data::read_idx_labels(path));
  } catch (const tinytorch::Error&) {
  }
  return 0;
}
