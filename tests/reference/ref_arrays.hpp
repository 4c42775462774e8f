// tests/reference/ref_arrays.hpp — reading the arrays a generator script recorded with PyTorch
// (tests/reference/gen_*.py writes `<name>_ref.hpp`: a map from a name to {shape, row-major data})
// and comparing a tinytorch tensor with one, for the test files that use such a map
// (test_loss_norm, test_transformer, test_gpt). Not a test file itself.
//   ref_arrays::get(map, "ce_w.mean.out")          the array, or std::runtime_error naming it
//   ref_arrays::to_tensor(array, kFloat32)         the array as a tensor of its shape
//   ref_arrays::compare(got, array, name, rtol, atol)
//       "" when got has the array's shape and |got - ref| <= atol + rtol |ref| everywhere (NaN
//       where the reference has NaN); else a description of the first difference, for CHECK(... == "").
#pragma once

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include <tinytorch/tinytorch.hpp>

namespace ref_arrays {

template <class Map>
const typename Map::mapped_type& get(const Map& arrays, const std::string& name) {
  auto it = arrays.find(name);
  if (it == arrays.end()) throw std::runtime_error("no reference array " + name);
  return it->second;
}

template <class Array>
tinytorch::Shape shape_of(const Array& a) {
  return tinytorch::Shape(a.shape.begin(), a.shape.end());
}

template <class Array>
tinytorch::Tensor to_tensor(const Array& a, tinytorch::DType dtype = tinytorch::kFloat32) {
  return tinytorch::tensor(a.data, shape_of(a), dtype);
}

template <class Array>
std::string compare(const tinytorch::Tensor& got, const Array& a, const std::string& name, double rtol = 1e-5,
                    double atol = 1e-6) {
  if (!got.defined()) return name + ": undefined";
  if (got.sizes() != shape_of(a))
    return name + ": shape " + tinytorch::shape_str(got.sizes()) + " vs " + tinytorch::shape_str(shape_of(a));
  const std::vector<double> g = got.contiguous().tolist<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double r = a.data[i];
    if ((std::isnan(r) && std::isnan(g[i])) || std::abs(g[i] - r) <= atol + rtol * std::abs(r)) continue;
    std::ostringstream os;
    os.precision(10);
    os << name << ": element " << i << " is " << g[i] << ", PyTorch has " << r;
    return os.str();
  }
  return "";
}

}  // namespace ref_arrays
