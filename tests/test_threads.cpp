// tests/test_threads.cpp — intra-op threads (core/parallel.hpp) and the threaded matrix product
// (backend/cpu/gemm.hpp).
//
//   set_num_threads / get_num_threads: torch's names, error for n < 1, OMP_NUM_THREADS default;
//   parallel_for: every index once, chunks of at least grain_size, inline when small, nested or
//     busy, the first exception rethrown, idle workers use no CPU (they sleep, never spin);
//   gemm, mm, a training step: bit-for-bit the same results on 1 and N threads, and under any
//     cache sizes the CPU reports (Eigen's blocking, pinned); the split
//     really happens for large products (the pool's job counter), not for small ones;
//   several threads calling mm at once (DataParallel's replicas) and parallel_for inside
//     parallel_for: no deadlock, right results.
// Tagged [threads]: scripts/test.sh also runs this file under ThreadSanitizer.
// Chapter: chapters/01-training-loop.md ("How fast is it?"). Reference: PyTorch's ATen/Parallel.h.
#include <catch2/catch.hpp>
#include <tinytorch/tinytorch.hpp>
#include <tinytorch/backend/cpu/gemm.hpp>  // backend::cpu::gemm and gemm_naive (internals under test)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

using namespace tinytorch;

namespace {

/// Restores the number of threads at the end of a test.
struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

uint64_t pool_jobs() { return detail::ThreadPool::instance().jobs(); }

/// The threads that ran the chunks of parallel_for(0, chunks, 1): each chunk records its thread,
/// then waits (up to 10 s in all, for a loaded machine) until `wait_for` chunks have started. A
/// chunk that waits holds its thread, so only other threads can start the next chunks.
std::set<std::thread::id> threads_running_chunks(int64_t chunks, int wait_for) {
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<int> started{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  parallel_for(0, chunks, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> g(m);
      ids.insert(std::this_thread::get_id());
    }
    ++started;
    while (started.load() < wait_for && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  return ids;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/// C (M, N) with leading dimension ldc, from gemm on `threads` threads; operands filled from `seed`.
template <class T>
struct GemmCase {
  int64_t M, N, K;
  bool ta, tb;
  T alpha, beta;
  int64_t lda, ldb, ldc;
  std::vector<T> A, B, C0;
  GemmCase(int64_t m, int64_t n, int64_t k, bool ta_, bool tb_, T alpha_, T beta_, unsigned seed)
      : M(m), N(n), K(k), ta(ta_), tb(tb_), alpha(alpha_), beta(beta_) {
    lda = (ta ? M : K) + 3;  // padded rows: the kernel must honour the leading dimensions
    ldb = (tb ? K : N) + 1;
    ldc = N + 5;
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    A.resize((ta ? K : M) * lda);
    B.resize((tb ? N : K) * ldb);
    C0.resize(M * ldc);
    for (auto& v : A) v = static_cast<T>(u(g));
    for (auto& v : B) v = static_cast<T>(u(g));
    for (auto& v : C0) v = static_cast<T>(u(g));
  }
  std::vector<T> run(int threads) const {
    set_num_threads(threads);
    std::vector<T> C = C0;
    backend::cpu::gemm<T>(M, N, K, alpha, A.data(), lda, ta, B.data(), ldb, tb, beta, C.data(), ldc);
    return C;
  }
  std::vector<T> naive() const {
    std::vector<T> C = C0;
    backend::cpu::gemm_naive<T>(M, N, K, alpha, A.data(), lda, ta, B.data(), ldb, tb, beta, C.data(), ldc);
    return C;
  }
};

template <class T>
void check_gemm_threads(double tol) {
  ThreadsGuard guard;
  struct Size {
    int64_t M, N, K;
  };
  // Rows split (M >= N), columns split (M small), GEMV-like (N = 1, M = 1), odd sizes that leave
  // leftovers after the aligned blocks, K above Eigen's k-block (576 floats with AVX2: several
  // passes over K), MLP-like products. Each has at least 2 x 2^18 multiply-adds, so it is split.
  const Size sizes[] = {{1000, 3, 200}, {3, 1000, 200}, {4096, 1, 160}, {1, 4096, 160}, {129, 127, 65},
                        {37, 1001, 31},  {64, 256, 64},  {520, 10, 128},  {17, 53, 1200}, {40, 40, 700}};
  unsigned seed = 1;
  for (const Size& s : sizes)
    for (int t = 0; t < 4; ++t)
      for (int ab = 0; ab < (t == 0 ? 2 : 1); ++ab) {  // alpha, beta: (1, 0); and (0.5, 1.5) once
        const T alpha = ab ? T(0.5) : T(1), beta = ab ? T(1.5) : T(0);
        GemmCase<T> c(s.M, s.N, s.K, t & 1, t & 2, alpha, beta, seed++);
        CAPTURE(s.M, s.N, s.K, c.ta, c.tb, alpha, beta);
        const std::vector<T> one = c.run(1);
        const uint64_t jobs = pool_jobs();
        for (int threads : {2, 3}) {
          CAPTURE(threads);
          const std::vector<T> many = c.run(threads);
          REQUIRE(std::memcmp(one.data(), many.data(), one.size() * sizeof(T)) == 0);
        }
        CHECK(pool_jobs() >= jobs + 2);  // every one of these products was split
        const std::vector<T> ref = c.naive();
        double worst = 0;
        for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(double(one[i]) - double(ref[i])));
        CHECK(worst <= tol * s.K);
      }
}

}  // namespace

TEST_CASE("set_num_threads / get_num_threads (torch.set_num_threads)", "[threads]") {
  ThreadsGuard guard;
  CHECK(get_num_threads() >= 1);
  set_num_threads(3);
  CHECK(get_num_threads() == 3);
  set_num_threads(1);
  CHECK(get_num_threads() == 1);
  CHECK_THROWS_WITH(set_num_threads(0), "set_num_threads: expected a positive number of threads, got 0");
  CHECK_THROWS_WITH(set_num_threads(-2), "set_num_threads: expected a positive number of threads, got -2");
  CHECK(get_num_threads() == 1);  // unchanged by the refused calls
}

TEST_CASE("the default number of threads: OMP_NUM_THREADS, else the CPUs this process may use / local ranks",
          "[threads]") {
  const char* old = std::getenv("OMP_NUM_THREADS");
  const std::string saved = old ? old : "";
  const int cpus = detail::available_cpus();
  CHECK(cpus >= 1);
  CHECK(cpus <= static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  unsetenv("OMP_NUM_THREADS");
  CHECK(detail::default_num_threads() == cpus);
  setenv("OMP_NUM_THREADS", "3", 1);
  CHECK(detail::default_num_threads() == 3);
  setenv("OMP_NUM_THREADS", "4,2", 1);  // a list of nesting levels: the first one counts
  CHECK(detail::default_num_threads() == 4);
  for (const char* bad : {"0", "-1", "abc", "2x", "99999999999999999999"}) {
    CAPTURE(bad);
    setenv("OMP_NUM_THREADS", bad, 1);
    CHECK(detail::default_num_threads() == cpus);  // ignored, with a warning on stderr
  }
  // Under mpirun the CPUs are shared among the ranks on this machine (at least 1 each).
  unsetenv("OMP_NUM_THREADS");
  const char* old_local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const std::string saved_local = old_local ? old_local : "";
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  CHECK(detail::default_num_threads() == std::max(1, cpus / 2));
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1000", 1);
  CHECK(detail::default_num_threads() == 1);
  setenv("OMP_NUM_THREADS", "3", 1);  // OMP_NUM_THREADS still wins
  CHECK(detail::default_num_threads() == 3);
  if (old_local) setenv("OMPI_COMM_WORLD_LOCAL_SIZE", saved_local.c_str(), 1);
  else unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (old) setenv("OMP_NUM_THREADS", saved.c_str(), 1);
  else unsetenv("OMP_NUM_THREADS");
}

TEST_CASE("parallel_for visits every index once, in at most ceil(n / grain_size) chunks", "[threads]") {
  ThreadsGuard guard;
  for (int threads : {1, 2, 3, 8})
    for (int64_t n : {0, 1, 7, 100, 1000, 4097})
      for (int64_t grain : {0, 1, 10, 64, 5000}) {
        CAPTURE(threads, n, grain);
        set_num_threads(threads);
        std::vector<std::atomic<int>> seen(n);
        std::mutex m;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        const bool pooled = threads > 1 && n > std::max<int64_t>(grain, 1);
        std::atomic<int> region_wrong{0};  // Catch2's CHECK is not thread-safe: count, check after
        parallel_for(5, 5 + n, grain, [&](int64_t b, int64_t e) {
          if (in_parallel_region() != pooled) ++region_wrong;
          for (int64_t i = b; i < e; ++i) seen[i - 5].fetch_add(1);
          std::lock_guard<std::mutex> g(m);
          chunks.emplace_back(b, e);
        });
        for (int64_t i = 0; i < n; ++i) REQUIRE(seen[i].load() == 1);
        CHECK(region_wrong.load() == 0);
        CHECK(chunks.size() <= static_cast<size_t>(threads));
        if (grain > 0) CHECK(static_cast<int64_t>(chunks.size()) <= (n + grain - 1) / grain);
        if (n == 0) CHECK(chunks.empty());
        if (n > 0 && n <= grain) CHECK(chunks.size() == 1);
        std::sort(chunks.begin(), chunks.end());  // equal chunks, the last one possibly shorter
        for (size_t i = 0; i + 2 < chunks.size(); ++i)
          CHECK(chunks[i].second - chunks[i].first == chunks[i + 1].second - chunks[i + 1].first);
        CHECK(!in_parallel_region());
      }
  CHECK_THROWS_WITH(parallel_for(0, 10, -1, [](int64_t, int64_t) {}), "parallel_for: expected grain_size >= 0, got -1");
}

TEST_CASE("workers started by a parallel_for take part in that same parallel_for", "[threads]") {
  // A new worker used to read the pool's generation after the job that started it had bumped it,
  // and slept through that job: the first parallel_for after set_num_threads(n) ran on the caller
  // alone. 8 threads: more than any other test starts, so at least some workers are new here.
  ThreadsGuard guard;
  set_num_threads(8);
  // every chunk waits until all 8 have started: only 8 threads get there
  CHECK(threads_running_chunks(8, 8).size() == 8);
}

TEST_CASE("parallel_for uses the pool's workers and rethrows the first exception", "[threads]") {
  ThreadsGuard guard;
  set_num_threads(4);
  const uint64_t jobs = pool_jobs();
  // the caller holds its first chunk until another has started, so a worker must take one
  const auto ids = threads_running_chunks(4, 2);
  CHECK(pool_jobs() == jobs + 1);
  CHECK(ids.size() >= 2);

  CHECK_THROWS_WITH(parallel_for(0, 100, 1,
                                 [](int64_t b, int64_t e) {
                                   if (b <= 50 && 50 < e) throw Error("chunk with 50 failed");
                                 }),
                    "chunk with 50 failed");
  CHECK(!in_parallel_region());
  std::atomic<int64_t> sum{0};  // the pool still works
  parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  CHECK(sum.load() == 999 * 1000 / 2);
}

TEST_CASE("parallel_for inside parallel_for, and from several threads at once, runs inline (no deadlock)",
          "[threads]") {
  ThreadsGuard guard;
  set_num_threads(3);
  std::atomic<int64_t> sum{0};
  std::atomic<int> not_inline{0};
  parallel_for(0, 30, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const auto outer = std::this_thread::get_id();
      parallel_for(0, 100, 1, [&](int64_t bb, int64_t ee) {
        // nested: one call, inline, on the same thread
        if (std::this_thread::get_id() != outer || bb != 0 || ee != 100) ++not_inline;
        for (int64_t j = bb; j < ee; ++j) sum += j;
      });
    }
  });
  CHECK(sum.load() == 30 * 4950);
  CHECK(not_inline.load() == 0);

  std::vector<std::thread> users;
  std::atomic<int> wrong{0};
  for (int u = 0; u < 4; ++u)
    users.emplace_back([&, u] {
      for (int rep = 0; rep < 50; ++rep) {
        std::atomic<int64_t> s{0};
        parallel_for(0, 1000 + u, 7, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) s += i;
        });
        if (s.load() != int64_t(999 + u) * (1000 + u) / 2) ++wrong;
      }
    });
  for (auto& t : users) t.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("idle workers sleep: no CPU time used between parallel_for calls", "[threads]") {
  ThreadsGuard guard;
  set_num_threads(4);
  parallel_for(0, 4, 1, [](int64_t, int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
  const double cpu0 = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double used = process_cpu_seconds() - cpu0;
  CHECK(used < 0.05);  // spinning workers would use ~0.3 s each here (OpenMP-style busy-waiting)
}

TEST_CASE("gemm gives the same bits on 1 and N threads (float32)", "[threads]") { check_gemm_threads<float>(1e-5); }

TEST_CASE("gemm gives the same bits on 1 and N threads (float64)", "[threads]") { check_gemm_threads<double>(1e-13); }

TEST_CASE("gemm splits only products worth a thread", "[threads]") {
  ThreadsGuard guard;
  set_num_threads(2);
  GemmCase<float> small(64, 64, 63, false, false, 1.f, 0.f, 7);  // 258048 < 2 x 2^18 multiply-adds
  uint64_t jobs = pool_jobs();
  small.run(2);
  CHECK(pool_jobs() == jobs);
  GemmCase<float> big(64, 64, 128, false, false, 1.f, 0.f, 7);  // 2 x 2^18: two blocks
  jobs = pool_jobs();
  big.run(2);
  CHECK(pool_jobs() == jobs + 1);
  GemmCase<float> thin(7, 7, 20000, false, false, 1.f, 0.f, 7);  // neither side long enough to split
  jobs = pool_jobs();
  thin.run(2);
  CHECK(pool_jobs() == jobs);
}

// The cache sizes Eigen reads from the CPU set its GEMM blocking, hence the order each C[i, j] is
// summed in. Every product pins them (backend/cpu/gemm.hpp, pin_eigen_cache_sizes): a CPU that
// reports other sizes (forced here with Eigen::setCpuCacheSizes, as a 48 KiB or an 8 KiB L1 would
// report) gives the same bits. The control shows the sizes matter: Eigen's own product, which
// does not pin them, sums the same 784-deep product differently under the two sizes.
TEST_CASE("gemm gives the same bits whatever cache sizes the CPU reports", "[threads]") {
  ThreadsGuard guard;
  GemmCase<float> c(64, 256, 784, false, false, 1.f, 0.f, 11);
  const std::vector<float> pinned = c.run(1);
  using Map = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                         Eigen::OuterStride<>>;
  auto eigen_product = [&] {  // Eigen's own product, blocked from the cache sizes as they stand
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> C(c.M, c.N);
    C.noalias() = Map(c.A.data(), c.M, c.K, Eigen::OuterStride<>(c.lda)) *
                  Map(c.B.data(), c.K, c.N, Eigen::OuterStride<>(c.ldb));
    return std::vector<float>(C.data(), C.data() + C.size());
  };
  std::vector<std::vector<float>> controls;
  for (std::ptrdiff_t l1 : {8 * 1024, 48 * 1024}) {
    CAPTURE(l1);
    Eigen::setCpuCacheSizes(l1, 16 * l1, 256 * l1);
    controls.push_back(eigen_product());
    for (int threads : {1, 2}) {
      Eigen::setCpuCacheSizes(l1, 16 * l1, 256 * l1);
      const std::vector<float> got = c.run(threads);
      CHECK(std::memcmp(pinned.data(), got.data(), pinned.size() * sizeof(float)) == 0);
      CHECK(Eigen::l1CacheSize() == backend::cpu::kEigenCacheSizes[0]);  // pinned again
    }
  }
  CHECK(std::memcmp(controls[0].data(), controls[1].data(), controls[0].size() * sizeof(float)) != 0);
}

TEST_CASE("a training step gives the same bits on 1 and 2 threads", "[threads]") {
  ThreadsGuard guard;
  auto train = [](int threads) {
    set_num_threads(threads);
    manual_seed(0);
    auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(784, 96), std::make_shared<nn::ReLU>(),
                                                  std::make_shared<nn::Linear>(96, 10));
    optim::SGD opt(model->parameters(), 0.05, 0.9);
    nn::CrossEntropyLoss loss_fn;
    Tensor x = randn({128, 784});
    Tensor y = randint(0, 10, {128});
    std::vector<float> losses;
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      Tensor loss = loss_fn(model->forward(x), y);
      loss.backward();
      opt.step();
      losses.push_back(loss.item<float>());
    }
    std::vector<float> out = losses;
    for (const Tensor& p : model->parameters()) {
      Tensor c = p.contiguous();
      out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    }
    return out;
  };
  const uint64_t jobs = pool_jobs();
  const std::vector<float> one = train(1);
  CHECK(pool_jobs() == jobs);
  const std::vector<float> two = train(2);
  CHECK(pool_jobs() > jobs);
  REQUIRE(one.size() == two.size());
  CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
}

TEST_CASE("mm from several threads at once (DataParallel's replicas) and inside parallel_for", "[threads]") {
  ThreadsGuard guard;
  set_num_threads(2);
  Generator g(3);
  Tensor a = randn({160, 128}, {}, &g), b = randn({128, 96}, {}, &g);
  set_num_threads(1);
  const Tensor expected = mm(a, b);
  set_num_threads(2);
  std::atomic<int> wrong{0};
  std::vector<std::thread> users;
  for (int u = 0; u < 3; ++u)
    users.emplace_back([&] {
      for (int rep = 0; rep < 10; ++rep) {
        Tensor c = mm(a, b);
        if (std::memcmp(c.data_ptr<float>(), expected.data_ptr<float>(), c.numel() * sizeof(float)) != 0) ++wrong;
      }
    });
  for (auto& t : users) t.join();
  CHECK(wrong.load() == 0);
  parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    Tensor c = mm(a, b);  // inline on this thread
    if (std::memcmp(c.data_ptr<float>(), expected.data_ptr<float>(), c.numel() * sizeof(float)) != 0) ++wrong;
  });
  CHECK(wrong.load() == 0);
}
