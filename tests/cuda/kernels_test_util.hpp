// tests/cuda/kernels_test_util.hpp — inputs and comparisons shared by the elementwise, reduce,
// softmax and optimizer kernel tests (test_cuda_{elementwise,reduce,softmax,optim}.cpp).
//
// make_values: deterministic pseudo-random values (an LCG: no <random>, the same numbers on every
// platform) in [lo, hi], optionally with NaN, +-inf and -0.0 planted at fixed positions.
// close / require_close: floating values agree within a relative tolerance (NaN matches NaN, an
// infinity the same infinity); integers exactly. Device results are not bitwise the CPU's: nvcc
// contracts a*b+c into fma, the device exp/log/tanh differ by an ulp or two, and the reductions
// add in another order. Not a test file itself.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

namespace kernels_test {

template <class T>
std::vector<T> make_values(int64_t n, uint64_t seed, double lo = -3.0, double hi = 3.0, bool specials = false) {
  std::vector<T> v(static_cast<size_t>(n));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;  // [0, 1)
    const double x = lo + (hi - lo) * u;
    if constexpr (std::is_integral_v<T>) v[i] = static_cast<T>(std::floor(x));
    else v[i] = static_cast<T>(x);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (specials) {
      const T planted[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                           -std::numeric_limits<T>::infinity(), T(-0.0), T(0)};
      for (int k = 0; k < 5; ++k)
        if (n > 2 * k + 1) v[static_cast<size_t>(2 * k + 1 + (n / 7) * k) % n] = planted[k];
    }
  }
  return v;
}

/// Default relative tolerance of a device result against the CPU: a few ulps of T.
template <class T> double default_tol() {
  if constexpr (std::is_same_v<T, float>) return 2e-5;
  else if constexpr (std::is_same_v<T, double>) return 1e-12;
  else return 0;
}

template <class T>
bool close(T got, T want, double tol) {
  if constexpr (std::is_integral_v<T>) {
    return got == want;
  } else {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    if (std::isnan(got) || std::isinf(got)) return false;
    const double g = static_cast<double>(got), w = static_cast<double>(want);
    return std::fabs(g - w) <= tol * std::fmax(1.0, std::fabs(w));
  }
}

/// REQUIREs got[i] close to want[i] for every i; reports the first mismatch with its index.
template <class T>
void require_close(const std::vector<T>& got, const std::vector<T>& want, const std::string& what,
                   double tol = default_tol<T>()) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], tol)) {
      INFO(what << ": index " << i << " of " << got.size() << ": got " << got[i] << ", want " << want[i]);
      REQUIRE(close(got[i], want[i], tol));
    }
  }
  SUCCEED(what);
}

}  // namespace kernels_test
