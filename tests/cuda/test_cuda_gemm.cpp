// tests/cuda/test_cuda_gemm.cpp — the CUDA gemm ladder (backend/cuda/gemm.cuh) against the CPU's oracle.
//
// Every kernel (naive, tiled, register-blocked) and the dispatching launcher `gemm` run on the
// same inputs as backend::cpu::gemm_naive (the triple loop in double) and must agree within
// (K + 2) * eps * (|alpha| |op(A)| |op(B)| + |beta| |C|)[i, j], the error bound of a length-K dot
// product summed in T, computed by gemm_naive itself on the absolute values. Covered: odd sizes
// (1, 7, 17, 33, 72-74, 129: partial tiles in every direction; 129^3 not in the sanitizer builds), the fast path's 128x128x8 and
// 256x128x16, all four trans combinations, leading dimensions larger than the minimum (views:
// the padding holds NaN, so a kernel that reads it fails, and C's padding must stay untouched),
// alpha/beta including beta = 0 over a NaN-filled C (must not be read), K = 0, NaN and inf in A
// propagating as on the CPU, float and double; `gemm`'s choice of kernel
// (gemm_register_blocked_applies) and its fallback to the tiled kernel; errors for bad arguments.
// Sizes stay small (at most ~2^21 multiply-adds a case): the simulator runs each GPU thread as a fiber.
// Same source under the simulator (g++ -DTINYTORCH_CUDA_SIM=1) and nvcc.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/backend/cpu/gemm.hpp>
#include <tinytorch/backend/cuda/gemm.cuh>
#include <tinytorch/core/check.hpp>

#include "cuda_test_util.hpp"

namespace {

namespace cu = tinytorch::backend::cuda;
namespace cpu = tinytorch::backend::cpu;
using cuda_test::DeviceArray;

template <class T>
using GemmFn = void (*)(int64_t, int64_t, int64_t, T, const T*, int64_t, bool, const T*, int64_t, bool, T, T*,
                        int64_t);

enum class Kernel { naive, tiled, register_blocked, gemm };
const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::naive: return "gemm_naive";
    case Kernel::tiled: return "gemm_tiled";
    case Kernel::register_blocked: return "gemm_register_blocked";
    default: return "gemm";
  }
}
template <class T>
GemmFn<T> kernel_fn(Kernel k) {
  switch (k) {
    case Kernel::naive: return cu::gemm_naive<T>;
    case Kernel::tiled: return cu::gemm_tiled<T>;
    case Kernel::register_blocked: return cu::gemm_register_blocked<T>;
    default: return cu::gemm<T>;
  }
}

struct Case {
  int64_t M, N, K;
  bool trans_a = false, trans_b = false;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // leading dimension = minimum + pad
  double alpha = 1, beta = 0;
  bool nan_c = false;  // C starts as NaN (only sensible with beta = 0)
  std::string str() const {
    std::ostringstream os;
    os << "M=" << M << " N=" << N << " K=" << K << " trans_a=" << trans_a << " trans_b=" << trans_b
       << " pads=" << pad_a << "," << pad_b << "," << pad_c << " alpha=" << alpha << " beta=" << beta
       << " nan_c=" << nan_c;
    return os.str();
  }
};

// Deterministic values in [-1, 1).
struct Lcg {
  uint64_t s;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
};

// A row-major (rows, cols) array with leading dimension ld >= cols: random values, NaN in the padding.
template <class T>
std::vector<T> matrix(int64_t rows, int64_t cols, int64_t ld, Lcg& rng) {
  std::vector<T> m(static_cast<size_t>(rows * ld), std::numeric_limits<T>::quiet_NaN());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m[r * ld + c] = static_cast<T>(rng.next());
  return m;
}

template <class T>
std::vector<T> abs_of(const std::vector<T>& v) {
  std::vector<T> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::abs(v[i]);
  return a;
}

// Host inputs of one case.
template <class T>
struct Inputs {
  int64_t lda, ldb, ldc, rows_a, rows_b;
  std::vector<T> A, B, C;
};

template <class T>
Inputs<T> make_inputs(const Case& c, uint64_t seed) {
  Inputs<T> in;
  Lcg rng{seed};
  const int64_t cols_a = c.trans_a ? c.M : c.K, cols_b = c.trans_b ? c.K : c.N;
  in.rows_a = c.trans_a ? c.K : c.M;
  in.rows_b = c.trans_b ? c.N : c.K;
  in.lda = cols_a + c.pad_a;
  in.ldb = cols_b + c.pad_b;
  in.ldc = c.N + c.pad_c;
  in.A = matrix<T>(in.rows_a, cols_a, in.lda, rng);
  in.B = matrix<T>(in.rows_b, cols_b, in.ldb, rng);
  in.C = matrix<T>(c.M, c.N, in.ldc, rng);
  if (c.nan_c)
    for (auto& x : in.C) x = std::numeric_limits<T>::quiet_NaN();
  return in;
}

// Runs `fn` on the device (buffers offset by `offset` elements, to test alignment) and returns C.
template <class T>
std::vector<T> run_device(GemmFn<T> fn, const Case& c, const Inputs<T>& in, int64_t offset = 0) {
  auto with_offset = [&](const std::vector<T>& v) {
    std::vector<T> w(v.size() + offset, T(0));
    std::copy(v.begin(), v.end(), w.begin() + offset);
    return w;
  };
  // +1 keeps every buffer non-empty (M, N or K may be 0).
  auto pad1 = [](std::vector<T> v) { v.push_back(T(0)); return v; };
  DeviceArray<T> dA(pad1(with_offset(in.A))), dB(pad1(with_offset(in.B))), dC(pad1(with_offset(in.C)));
  fn(c.M, c.N, c.K, static_cast<T>(c.alpha), dA.data() + offset, in.lda, c.trans_a, dB.data() + offset, in.ldb,
     c.trans_b, static_cast<T>(c.beta), dC.data() + offset, in.ldc);
  std::vector<T> out = dC.download();
  return std::vector<T>(out.begin() + offset, out.begin() + offset + in.C.size());
}

// Compares the device's C with cpu::gemm_naive's; returns the number of mismatches and describes the first.
template <class T>
int64_t compare_with_cpu(const Case& c, const Inputs<T>& in, const std::vector<T>& got, std::string& first) {
  const T alpha = static_cast<T>(c.alpha), beta = static_cast<T>(c.beta);
  std::vector<T> ref = in.C;
  cpu::gemm_naive<T>(c.M, c.N, c.K, alpha, in.A.data(), in.lda, c.trans_a, in.B.data(), in.ldb, c.trans_b, beta,
                     ref.data(), in.ldc);
  // Error bound: the same product on absolute values (NaN/inf entries give a NaN/inf bound: skipped).
  std::vector<T> bound = abs_of(in.C);
  cpu::gemm_naive<T>(c.M, c.N, c.K, std::abs(alpha), abs_of(in.A).data(), in.lda, c.trans_a, abs_of(in.B).data(),
                     in.ldb, c.trans_b, std::abs(beta), bound.data(), in.ldc);
  const double eps = std::numeric_limits<T>::epsilon();
  int64_t bad = 0;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < in.ldc; ++j) {
      const T r = ref[i * in.ldc + j], g = got[i * in.ldc + j];
      bool ok;
      if (j >= c.N) ok = std::isnan(g) == std::isnan(in.C[i * in.ldc + j]) && (std::isnan(g) || g == in.C[i * in.ldc + j]);
      else if (std::isnan(r)) ok = std::isnan(g);
      else if (std::isinf(r)) ok = g == r;
      else {
        const double tol = (c.K + 2) * eps * static_cast<double>(bound[i * in.ldc + j]) +
                           std::numeric_limits<T>::min();
        ok = std::abs(static_cast<double>(g) - static_cast<double>(r)) <= tol;
      }
      if (!ok && bad++ == 0) {
        std::ostringstream os;
        os << "C[" << i << ", " << j << "] = " << g << ", cpu gemm_naive " << r
           << (j >= c.N ? " (padding: must stay untouched)" : "");
        first = os.str();
      }
    }
  }
  return bad;
}

template <class T>
void check_case(Kernel k, const Case& c, uint64_t seed = 42) {
  const Inputs<T> in = make_inputs<T>(c, seed);
  const std::vector<T> got = run_device<T>(kernel_fn<T>(k), c, in);
  std::string first;
  const int64_t bad = compare_with_cpu(c, in, got, first);
  INFO(kernel_name(k) << "<" << (sizeof(T) == 4 ? "float" : "double") << "> " << c.str() << ": " << bad
                      << " mismatches; first: " << first);
  CHECK(bad == 0);
}

// The brief's odd sizes (M, N, K): partial tiles in every direction.
const std::vector<std::vector<int64_t>> kOddSizes = {{1, 1, 1},    {7, 7, 7},    {33, 17, 129},
                                                     {72, 73, 74}, {74, 73, 72}, {129, 129, 129}};
// In the sanitizer builds (scripts/test.sh's ASan and TSan stages, where the simulator runs each
// GPU thread some 10-20x slower) 129^3, 70% of these sizes' multiply-adds, is left to the main
// build (and its checked launches): 33x17x129 and 72-74 still cut partial tiles in every direction.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TT_GEMM_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TT_GEMM_TEST_SANITIZED 1
#endif
#endif
#ifdef TT_GEMM_TEST_SANITIZED
constexpr int64_t kLargestOddSize = 74;
#else
constexpr int64_t kLargestOddSize = 129;
#endif
// Sizes the register-blocked kernel takes (M % 128 == 0, N % 128 == 0, K % 8 == 0).
const std::vector<std::vector<int64_t>> kFastSizes = {{128, 128, 8}, {256, 128, 16}};

// full: dense with alpha and beta, then views over a NaN C with beta = 0; else (to save simulator
// time where float already covers those) one run of views with alpha and beta.
template <class T>
void odd_sizes_all_trans(Kernel k, bool full = true) {
  for (const auto& s : kOddSizes) {
    if (s[0] > kLargestOddSize) continue;
    for (int t = 0; t < 4; ++t) {
      Case c{s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0};
      c.alpha = 1.5;
      c.beta = -0.5;
      if (full) check_case<T>(k, c);  // dense, alpha and beta
      c.pad_a = 3;                    // views: leading dimensions past the minimum
      c.pad_b = 5;
      c.pad_c = 2;
      if (!full) {
        check_case<T>(k, c);
        continue;
      }
      c.alpha = 1;  // beta = 0 over C = NaN
      c.beta = 0;
      c.nan_c = true;
      check_case<T>(k, c);
    }
  }
}

template <class T>
void fast_sizes_all_trans(Kernel k) {
  for (const auto& s : kFastSizes)
    for (int t = 0; t < 4; ++t) {
      Case c{s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0};
      c.alpha = 0.75;
      c.beta = 2;
      check_case<T>(k, c);
      c.pad_a = c.pad_b = c.pad_c = 4;
      c.alpha = 1;
      c.beta = 0;
      c.nan_c = true;
      check_case<T>(k, c);
    }
}

}  // namespace

TEST_CASE("cuda gemm_naive matches cpu gemm_naive: odd and fast sizes, all trans, views, alpha/beta", "[cuda][gemm]") {
  odd_sizes_all_trans<float>(Kernel::naive);
  odd_sizes_all_trans<double>(Kernel::naive);
  fast_sizes_all_trans<float>(Kernel::naive);
}

TEST_CASE("cuda gemm_tiled matches cpu gemm_naive: odd and fast sizes, all trans, views, alpha/beta", "[cuda][gemm]") {
  odd_sizes_all_trans<float>(Kernel::tiled);
  odd_sizes_all_trans<double>(Kernel::tiled, /*full=*/false);
  fast_sizes_all_trans<float>(Kernel::tiled);
  check_case<double>(Kernel::tiled, Case{256, 128, 16, true, false, 4, 4, 4, 1, 0, true});
}

// gemm runs gemm_tiled on odd sizes (checked bit for bit below), so one odd size suffices here.
TEST_CASE("cuda gemm (dispatch) matches cpu gemm_naive: fast sizes and (72, 73, 74), all trans, views", "[cuda][gemm]") {
  fast_sizes_all_trans<float>(Kernel::gemm);
  fast_sizes_all_trans<double>(Kernel::gemm);
  for (int t = 0; t < 4; ++t) {
    check_case<float>(Kernel::gemm, Case{72, 73, 74, (t & 1) != 0, (t & 2) != 0, 0, 0, 0, 1.5, -0.5});
    check_case<double>(Kernel::gemm, Case{72, 73, 74, (t & 1) != 0, (t & 2) != 0, 3, 5, 2, 1, 0, true});
  }
}

TEST_CASE("cuda gemm_register_blocked matches cpu gemm_naive on its shapes, views, alpha/beta", "[cuda][gemm]") {
  for (const auto& s : kFastSizes) {
    Case c{s[0], s[1], s[2]};
    for (double alpha : {1.0, -2.0})
      for (double beta : {0.0, 1.0, 0.5}) {
        c.alpha = alpha;
        c.beta = beta;
        c.pad_a = c.pad_b = c.pad_c = 0;
        check_case<float>(Kernel::register_blocked, c);
        c.pad_a = 4;  // leading dimensions past the minimum, still multiples of 4
        c.pad_b = 8;
        c.pad_c = 12;
        check_case<float>(Kernel::register_blocked, c);
      }
    c = Case{s[0], s[1], s[2]};
    c.nan_c = true;  // beta = 0 over NaN: C must not be read
    check_case<float>(Kernel::register_blocked, c);
  }
  // K = 512 (64 steps of BK) and 384 x 128: more blocks and more steps, still ~2^24 / 2^23.5 flops.
  check_case<float>(Kernel::register_blocked, Case{128, 128, 512});
  check_case<float>(Kernel::register_blocked, Case{384, 128, 8, false, false, 0, 0, 0, 1, 0.25});
}

TEST_CASE("cuda gemm: K = 0 gives beta * C, and beta = 0 gives zeros over a NaN C", "[cuda][gemm]") {
  for (Kernel k : {Kernel::naive, Kernel::tiled, Kernel::gemm}) {
    check_case<float>(k, Case{5, 7, 0, false, false, 0, 0, 0, 1, 0.5});
    check_case<double>(k, Case{5, 7, 0, true, true, 1, 2, 3, 1, 0, true});
    check_case<float>(k, Case{0, 7, 3});
    check_case<float>(k, Case{5, 0, 3});
  }
  check_case<float>(Kernel::register_blocked, Case{128, 128, 0, false, false, 0, 0, 0, 1, 0, true});
  check_case<float>(Kernel::gemm, Case{128, 128, 0, false, false, 0, 0, 0, 2, 3});
}

namespace {

// NaN at op(A)[3, 2] and inf at op(A)[5, 1], -inf at op(A)[6, 0] and 0 at op(B)[0, 4]: rows 3, 5, 6 of
// C are NaN / inf (and NaN where inf meets 0), as on the CPU.
template <class T>
void nan_inf_case(Kernel k, Case c) {
  Inputs<T> in = make_inputs<T>(c, 7);
  auto a_at = [&](int64_t i, int64_t kk) -> T& { return c.trans_a ? in.A[kk * in.lda + i] : in.A[i * in.lda + kk]; };
  auto b_at = [&](int64_t kk, int64_t j) -> T& { return c.trans_b ? in.B[j * in.ldb + kk] : in.B[kk * in.ldb + j]; };
  a_at(3, 2) = std::numeric_limits<T>::quiet_NaN();
  a_at(5, 1) = std::numeric_limits<T>::infinity();
  a_at(6, 0) = -std::numeric_limits<T>::infinity();
  b_at(0, 4) = T(0);
  const std::vector<T> got = run_device<T>(kernel_fn<T>(k), c, in);
  std::string first;
  const int64_t bad = compare_with_cpu(c, in, got, first);
  INFO(kernel_name(k) << " " << c.str() << ": " << bad << " mismatches; first: " << first);
  CHECK(bad == 0);
  // The test means something: the CPU's answer has those NaN and inf.
  CHECK(std::isnan(got[3 * in.ldc + 0]));
  CHECK(std::isinf(got[5 * in.ldc + 0]));
  CHECK(std::isnan(got[6 * in.ldc + 4]));  // -inf * 0
  // cpu::gemm (Eigen) agrees on where NaN and inf are.
  std::vector<T> eig = in.C;
  cpu::gemm<T>(c.M, c.N, c.K, static_cast<T>(c.alpha), in.A.data(), in.lda, c.trans_a, in.B.data(), in.ldb,
               c.trans_b, static_cast<T>(c.beta), eig.data(), in.ldc);
  int64_t differ = 0;
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      const T e = eig[i * in.ldc + j], g = got[i * in.ldc + j];
      if (std::isnan(e) != std::isnan(g) || std::isinf(e) != std::isinf(g)) ++differ;
    }
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("cuda gemm: NaN and inf in A propagate as on the CPU", "[cuda][gemm]") {
  for (Kernel k : {Kernel::naive, Kernel::tiled, Kernel::gemm})
    for (int t = 0; t < 4; ++t) {
      nan_inf_case<float>(k, Case{33, 17, 129, (t & 1) != 0, (t & 2) != 0, 0, 0, 0, 1, 0.5});
      nan_inf_case<double>(k, Case{33, 17, 129, (t & 1) != 0, (t & 2) != 0, 1, 2, 3, -1, 0});
    }
  nan_inf_case<float>(Kernel::register_blocked, Case{128, 128, 8, false, false, 0, 0, 0, 1, 0.5});
  nan_inf_case<float>(Kernel::gemm, Case{256, 128, 16});
}

TEST_CASE("cuda gemm takes the register-blocked kernel only when it applies, else falls back to tiled", "[cuda][gemm]") {
  DeviceArray<float> buf(4096 + 8);
  const float* p = buf.data();  // 16-byte aligned (cudaMalloc: 256; the simulator: at least 16)
  REQUIRE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 8, false, p, 128, false, p, 128));
  REQUIRE(cu::gemm_register_blocked_applies<float>(256, 384, 16, p, 20, false, p, 388, false, p, 400));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p + 1, 8, false, p, 128, false, p, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 8, false, p + 2, 128, false, p, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 8, false, p, 128, false, p + 3, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 9, false, p, 128, false, p, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 8, false, p, 130, false, p, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 8, false, p, 128, false, p, 129));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 128, true, p, 128, false, p, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 8, p, 8, false, p, 8, true, p, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(120, 128, 8, p, 8, false, p, 128, false, p, 128));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 136, 8, p, 8, false, p, 136, false, p, 136));
  CHECK_FALSE(cu::gemm_register_blocked_applies<float>(128, 128, 12, p, 12, false, p, 128, false, p, 128));
  const double* pd = reinterpret_cast<const double*>(p);
  CHECK_FALSE(cu::gemm_register_blocked_applies<double>(128, 128, 8, pd, 8, false, pd, 128, false, pd, 128));

  // Where it does not apply, gemm gives gemm_tiled's result bit for bit; where it applies,
  // gemm_register_blocked's (which sums over k in the same order as gemm_tiled: equal too).
  auto same_as = [](Kernel k, const Case& c, int64_t offset) {
    const Inputs<float> in = make_inputs<float>(c, 3);
    const std::vector<float> a = run_device<float>(cu::gemm<float>, c, in, offset);
    const std::vector<float> b = run_device<float>(kernel_fn<float>(k), c, in, offset);
    int64_t differ = 0;
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) differ += a[i * in.ldc + j] != b[i * in.ldc + j];
    INFO(kernel_name(k) << " " << c.str() << " offset=" << offset);
    CHECK(differ == 0);
  };
  same_as(Kernel::tiled, Case{128, 128, 8}, 1);                  // unaligned pointers
  same_as(Kernel::tiled, Case{128, 128, 8, false, false, 1}, 0);  // lda = 9
  same_as(Kernel::tiled, Case{128, 128, 12}, 0);                 // K % 8 != 0
  same_as(Kernel::tiled, Case{120, 128, 8}, 0);                  // M % 128 != 0
  same_as(Kernel::tiled, Case{128, 136, 8}, 0);                  // N % 128 != 0
  same_as(Kernel::tiled, Case{128, 128, 8, true, false}, 0);     // transposed A
  same_as(Kernel::register_blocked, Case{128, 128, 8}, 0);
  same_as(Kernel::register_blocked, Case{256, 128, 16, false, false, 4, 4, 4, 1, 1}, 0);
  same_as(Kernel::tiled, Case{256, 128, 16, false, false, 4, 4, 4, 1, 1}, 0);
}

TEST_CASE("cuda gemm: bad arguments throw tinytorch::Error", "[cuda][gemm]") {
  DeviceArray<float> buf(4096 + 8);
  float* p = buf.data();
  using tinytorch::Error;
  CHECK_THROWS_AS(cu::gemm<float>(-1, 4, 4, 1.f, p, 4, false, p, 4, false, 0.f, p, 4), Error);
  CHECK_THROWS_AS(cu::gemm<float>(4, 4, 4, 1.f, p, 3, false, p, 4, false, 0.f, p, 4), Error);  // lda < K
  CHECK_THROWS_AS(cu::gemm<float>(4, 4, 4, 1.f, p, 4, false, p, 4, true, 0.f, p, 3), Error);   // ldc < N
  CHECK_THROWS_AS(cu::gemm_naive<double>(4, 5, 6, 1.0, reinterpret_cast<double*>(p), 3, true,
                                         reinterpret_cast<double*>(p), 5, false, 0.0, reinterpret_cast<double*>(p), 5),
                  Error);  // trans_a: lda < M
  CHECK_THROWS_WITH(cu::gemm_register_blocked<float>(120, 128, 8, 1.f, p, 8, false, p, 128, false, 0.f, p, 128),
                    Catch::Contains("gemm_register_blocked") && Catch::Contains("M=120"));
  CHECK_THROWS_AS(cu::gemm_register_blocked<float>(128, 128, 8, 1.f, p + 1, 8, false, p, 128, false, 0.f, p, 128),
                  Error);
}
