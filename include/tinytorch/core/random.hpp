// tinytorch/core/random.hpp — Generator: a seeded, portable random stream.
//
// The engine is std::mt19937_64, whose output sequence the C++ standard fixes, so the same seed
// gives the same numbers with every compiler, on every run and on every rank. Distributions are
// written here (not std::uniform_real_distribution, whose algorithm differs between standard
// libraries):
//   uniform  u = (bits >> 11) * 2^-53                     in [0, 1)
//   normal   Box-Muller: sqrt(-2 ln(1-u1)) * cos(2 pi u2)
//   integer  in [low, high) by rejection (no modulo bias)
// Streams do not match PyTorch's bit for bit (another engine and other sampling formulas); tests inject weights when
// they compare numbers with PyTorch.
// Thread safety: each Generator holds a mutex that every draw takes, as PyTorch's generators do
// (at::GeneratorImpl::mutex_, held by each random kernel), so two threads that build layers or call
// randn at the same time do not race on the default generator; ops that draw many numbers take the
// lock once (Generator::locked). See docs/architecture.md, "Thread safety".
// Chapter: chapters/01-training-loop.md ("Seeds and reproducibility").
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <sstream>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

/// A random stream. Thread-safe: every member function locks the generator's mutex (as
/// PyTorch's generators carry a mutex that each random op holds while it draws), so threads may
/// share one Generator, the default one included. Which numbers each thread gets then depends on
/// the order in which they draw; for reproducible multi-threaded runs give each thread its own
/// Generator (or run it under a GeneratorGuard). An op that draws many numbers takes the lock
/// once, through locked(), instead of once per number.
class Generator {
 public:
  /// The unsynchronised state and its draws. Reached only through Generator::locked(), which
  /// holds the lock while the caller uses it.
  class Stream {
   public:
    explicit Stream(uint64_t seed) : engine_(seed), seed_(seed) {}
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
    /// Uniform integer in [low, high), for any int64 bounds (high - low may exceed INT64_MAX:
    /// the range is computed in uint64). Throws if low >= high.
    int64_t randint(int64_t low, int64_t high) {
      TT_CHECK(low < high, "randint: expected low < high, got low=", low, " high=", high);
      const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);  // in [1, 2^64 - 1]
      const uint64_t limit = UINT64_MAX - UINT64_MAX % range;  // a multiple of range: no modulo bias
      uint64_t x;
      do x = engine_(); while (x >= limit);
      return static_cast<int64_t>(static_cast<uint64_t>(low) + x % range);  // modulo 2^64: no overflow
    }

   private:
    friend class Generator;
    std::mt19937_64 engine_;
    uint64_t seed_;
    bool has_spare_ = false;
    double spare_ = 0;
    uint64_t seed_version_ = 0;
  };

  explicit Generator(uint64_t seed = 5489u) : state_(seed) {}
  /// A copy of `other`'s current state (a new, independent stream that repeats other's numbers).
  Generator(const Generator& other) : state_(other.snapshot()) {}
  Generator& operator=(const Generator& other) {
    if (this != &other) {
      Stream s = other.snapshot();
      std::lock_guard<std::mutex> lock(mutex_);
      state_ = s;
    }
    return *this;
  }

  /// Calls f(Stream&) with the lock held, and returns what f returns: the numbers f draws form
  /// one unbroken run of this stream even while other threads draw too. f must not call this
  /// Generator's own member functions (the mutex is not recursive: that would deadlock).
  template <class F>
  decltype(auto) locked(F&& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    return f(state_);
  }

  void manual_seed(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.engine_.seed(seed);
    state_.seed_ = seed;
    state_.has_spare_ = false;
    ++state_.seed_version_;
  }
  uint64_t initial_seed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.seed_;
  }
  /// How many times manual_seed was called: lets holders of derived generators (DataParallel's
  /// per-replica ones) notice a re-seed and re-seed theirs.
  uint64_t seed_version() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_.seed_version_;
  }

  // ---- state for checkpoints (torch.Generator.get_state / set_state) ----
  // PyTorch returns a ByteTensor; core/ sits below Tensor, so here the state is 64-bit words:
  // the mt19937_64 engine's state as its operator<< writes it (312 words and the position), the
  // seed, whether a Box-Muller value is waiting, and that value's bits. A caller that checkpoints
  // it stores the words in an int64 tensor (examples/train_mnist.cpp does).

  /// The whole state as words; set_state(get_state()) makes this stream repeat from here.
  std::vector<uint64_t> get_state() const {
    Stream s = snapshot();
    std::ostringstream os;
    os << s.engine_;
    std::istringstream is(os.str());
    std::vector<uint64_t> words;
    for (uint64_t w; is >> w;) words.push_back(w);
    uint64_t spare_bits = 0;
    static_assert(sizeof spare_bits == sizeof s.spare_, "double is 64-bit");
    std::memcpy(&spare_bits, &s.spare_, sizeof spare_bits);
    words.push_back(s.seed_);
    words.push_back(s.has_spare_ ? 1 : 0);
    words.push_back(spare_bits);
    return words;
  }
  /// Restores a get_state(). Throws tinytorch::Error if `words` does not have get_state()'s
  /// length or the engine rejects it ("Generator.set_state: ...").
  void set_state(const std::vector<uint64_t>& words) {
    const size_t n = Generator().get_state().size();
    TT_CHECK(words.size() == n, "Generator.set_state: expected ", n, " words (Generator::get_state()), got ",
             words.size());
    std::ostringstream os;
    for (size_t i = 0; i + 3 < n; ++i) os << words[i] << ' ';
    Stream s(0);
    std::istringstream is(os.str());
    is >> s.engine_;
    TT_CHECK(!is.fail(), "Generator.set_state: the words are not a mt19937_64 state");
    TT_CHECK(words[n - 2] <= 1, "Generator.set_state: word ", n - 2, " (has a spare normal) must be 0 or 1, got ",
             words[n - 2]);
    s.seed_ = words[n - 3];
    s.has_spare_ = words[n - 2] == 1;
    std::memcpy(&s.spare_, &words[n - 1], sizeof s.spare_);
    std::lock_guard<std::mutex> lock(mutex_);
    s.seed_version_ = state_.seed_version_;
    state_ = s;
  }

  uint64_t next_u64() { return locked([](Stream& s) { return s.next_u64(); }); }
  /// Uniform double in [0, 1).
  double uniform() { return locked([](Stream& s) { return s.uniform(); }); }
  /// Uniform in [low, high).
  double uniform(double low, double high) { return locked([&](Stream& s) { return s.uniform(low, high); }); }
  /// Standard normal N(0, 1).
  double normal() { return locked([](Stream& s) { return s.normal(); }); }
  /// Uniform integer in [low, high). Throws if low >= high.
  int64_t randint(int64_t low, int64_t high) { return locked([&](Stream& s) { return s.randint(low, high); }); }

 private:
  Stream snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_;
  }

  mutable std::mutex mutex_;
  Stream state_;
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
/// Thread-safe (see Generator): threads may draw from it concurrently, but then the numbers each
/// one gets depend on timing. Threads that need reproducible numbers use their own Generator, or a
/// GeneratorGuard.
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

TT_NAMESPACE_END  // namespace tinytorch
