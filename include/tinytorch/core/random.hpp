// tinytorch/core/random.hpp — Generator: a seeded, portable random stream.
//
// The engine is std::mt19937_64, whose output sequence the C++ standard fixes, so the same seed
// gives the same numbers with every compiler, on every run and on every rank. Distributions are
// written here (not std::uniform_real_distribution, whose algorithm differs between standard
// libraries):
//   uniform  u = (bits >> 11) * 2^-53                     in [0, 1)
//   normal   Box-Muller: sqrt(-2 ln(1-u1)) * cos(2 pi u2)
//   integer  in [low, high) by rejection (no modulo bias)
// Streams do not match PyTorch's bit for bit (the issue allows this); tests inject weights when
// they compare numbers with PyTorch.
// Chapter: chapters/01-training-loop.md ("Seeds and reproducibility").
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include "check.hpp"

namespace tinytorch {

class Generator {
 public:
  explicit Generator(uint64_t seed = 5489u) : engine_(seed), seed_(seed) {}

  void manual_seed(uint64_t seed) {
    engine_.seed(seed);
    seed_ = seed;
    has_spare_ = false;
    ++seed_version_;
  }
  uint64_t initial_seed() const { return seed_; }
  /// How many times manual_seed was called: lets holders of derived generators (DataParallel's
  /// per-replica ones) notice a re-seed and re-seed theirs.
  uint64_t seed_version() const { return seed_version_; }

  uint64_t next_u64() { return engine_(); }
  /// Uniform double in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0); }
  /// Uniform in [low, high).
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  /// Standard normal N(0, 1) (Box-Muller; the second value of each pair is kept for the next call).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform(), u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(1.0 - u1));
    double th = 6.283185307179586 * u2;
    spare_ = r * std::sin(th);
    has_spare_ = true;
    return r * std::cos(th);
  }
  /// Uniform integer in [low, high). Throws if low >= high.
  int64_t randint(int64_t low, int64_t high) {
    TT_CHECK(low < high, "randint: expected low < high, got low=", low, " high=", high);
    uint64_t range = static_cast<uint64_t>(high - low);
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t x;
    do x = engine_(); while (x >= limit);
    return low + static_cast<int64_t>(x % range);
  }

 private:
  std::mt19937_64 engine_;
  uint64_t seed_;
  bool has_spare_ = false;
  double spare_ = 0;
  uint64_t seed_version_ = 0;
};

namespace detail {
/// This thread's replacement for the default generator (nullptr: none). Set by GeneratorGuard.
inline Generator*& thread_generator() {
  thread_local Generator* g = nullptr;
  return g;
}
/// The process-wide default generator, whatever this thread's GeneratorGuard says.
inline Generator& process_generator() {
  static Generator g;
  return g;
}
}  // namespace detail

/// The default generator: what every random op uses when given no Generator, and what
/// torch.manual_seed seeds. It is the process-wide one, unless this thread runs under a
/// GeneratorGuard (DataParallel's replicas: see below).
/// Not thread-safe: two threads drawing from one Generator race. Threads that need random
/// numbers use their own Generator, or a GeneratorGuard.
inline Generator& default_generator() {
  if (Generator* g = detail::thread_generator()) return *g;
  return detail::process_generator();
}

/// Seeds the default generator, like torch.manual_seed.
inline void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

/// RAII: makes `gen` this thread's default generator for the guard's lifetime (then restores
/// the previous one). parallel::parallel_apply runs each replica under one, so a replica's
/// Dropout draws from that replica's own stream, as each GPU has its own default generator in
/// PyTorch (torch.cuda.default_generators), and no two threads share a Generator.
class GeneratorGuard {
 public:
  explicit GeneratorGuard(Generator* gen) : prev_(detail::thread_generator()) { detail::thread_generator() = gen; }
  ~GeneratorGuard() { detail::thread_generator() = prev_; }
  GeneratorGuard(const GeneratorGuard&) = delete;
  GeneratorGuard& operator=(const GeneratorGuard&) = delete;

 private:
  Generator* prev_;
};

}  // namespace tinytorch
