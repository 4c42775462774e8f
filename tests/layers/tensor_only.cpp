// tests/layers/tensor_only.cpp — the metadata floor links alone: a program that includes only
// <tinytorch/tensor.hpp> (and so core/) builds a tensor by hand and reads its metadata.
//
// A 2x3 float32 TensorImpl over a 24-byte Storage, then its transpose (strides swapped, no copy):
//   dim 2, numel 6, size(-1) 3, stride(0) 3, contiguous; transposed: size(0) 3, contiguous false.
// Nothing above tensor.hpp is included, so any Tensor method it calls that is defined on a higher
// floor (ops/, autograd/, functional) is an undefined reference at link: ctest layers_tensor_only
// builds and runs this file (tests/layers/CMakeLists.txt). Chapter: chapters/02-autograd.md
// (one op, top to bottom); the layers: docs/architecture.md.
#include <tinytorch/tensor.hpp>

#include <cstdio>
#include <memory>

int main() {
  using namespace tinytorch;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(6 * sizeof(float), Device::cpu());
  impl->shape = Shape{2, 3};
  impl->strides = Strides{3, 1};
  impl->dtype = kFloat32;
  Tensor t(impl);
  float* p = t.data_ptr<float>();
  for (int i = 0; i < 6; ++i) p[i] = static_cast<float>(i);

  auto tr = std::make_shared<TensorImpl>(*impl);  // the transpose: same storage, strides swapped
  tr->shape = Shape{3, 2};
  tr->strides = Strides{1, 3};
  Tensor u(tr);

  int bad = 0;
  auto expect = [&](const char* what, long long got, long long want) {
    std::printf("%-22s %lld\n", what, got);
    if (got != want) {
      std::printf("  expected %lld\n", want);
      ++bad;
    }
  };
  expect("dim", t.dim(), 2);
  expect("numel", t.numel(), 6);
  expect("size(-1)", t.size(-1), 3);
  expect("stride(0)", t.stride(0), 3);
  expect("is_contiguous", t.is_contiguous(), 1);
  expect("t.size(0)", u.size(0), 3);
  expect("t.is_contiguous", u.is_contiguous(), 0);
  expect("t element (2, 1)", static_cast<long long>(u.data_ptr<float>()[2 * u.stride(0) + 1 * u.stride(1)]), 5);
  bool threw = false;
  try {
    (void)t.size(2);
  } catch (const Error&) {
    threw = true;  // "size: dimension out of range (expected to be in range of [-2, 1], but got 2)"
  }
  expect("size(2) throws", threw, 1);
  std::printf(bad ? "layers tensor_only: FAILED\n" : "layers tensor_only: ok\n");
  return bad ? 1 : 0;
}
