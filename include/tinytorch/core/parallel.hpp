// tinytorch/core/parallel.hpp — intra-op parallelism: set_num_threads, get_num_threads,
// parallel_for, over one small pool of worker threads that sleep when there is no work.
//
//   parallel_for(begin, end, grain_size, f)   calls f(b, e) on disjoint chunks [b, e) that cover
//                                             [begin, end), on up to get_num_threads() threads at
//                                             once (the caller is one of them), and returns when
//                                             every chunk is done.
// The chunks, as PyTorch's at::parallel_for: n = end - begin, tasks = min(get_num_threads(),
// ceil(n / grain_size)), chunk = ceil(n / tasks). f runs inline on the calling thread when
// n <= grain_size, with one thread, inside a parallel_for (nested), or while another thread uses
// the pool (DataParallel's replicas): nothing waits for the pool, so nothing deadlocks on it. The
// first exception thrown by f is rethrown in the caller after every chunk has finished.
// get_num_threads(): set_num_threads(n), else OMP_NUM_THREADS (a positive integer, or the first of
// a list like "4,2"; anything else is ignored with a warning, as PyTorch), else the CPUs this
// process may run on (sched_getaffinity) divided by the ranks mpirun started on this machine
// (OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS), so N ranks do not start N x cores threads.
// Workers start on first use and live until the process ends (a fork()ed child starts afresh).
// Our own pool, not Eigen's OpenMP threads: an OpenMP team busy-waits (libgomp spins up to
// GOMP_SPINCOUNT after each region), which on a shared machine takes the core the working thread
// needs. Here a worker with no task polls for kSpinMicros = 20 us, then sleeps on a condition
// variable; the caller wakes at most tasks-1 workers and takes chunks itself (an atomic counter),
// so a worker slow to start finds its chunk done; chunks are independent (no barrier inside a
// matrix product). Waking a sleeping worker costs ~100 us, so only large work is split
// (GRAIN_SIZE elements for loops; the matrix product from 2^18 multiply-adds per thread,
// backend/cpu/gemm.hpp). The measurements behind 20 us, and the step times against Eigen's
// OpenMP and libtorch on a loaded machine: docs/performance.md, "Threads on a shared machine".
// Chapter: chapters/01-training-loop.md ("How fast is it?"). Reference: PyTorch's ATen/Parallel.h
// and ParallelNative.cpp; libgomp's GOMP_SPINCOUNT / OMP_WAIT_POLICY.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

/// Elementwise loops shorter than this many elements are not worth a second thread
/// (at::internal::GRAIN_SIZE).
constexpr int64_t GRAIN_SIZE = 32768;

namespace detail {

/// How many CPUs this process may run on (its affinity mask), at least 1.
inline int available_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

/// OMP_NUM_THREADS if it holds a positive integer (the first item of a list), else 0. A value
/// that is set but not a positive integer is reported once on stderr and ignored (PyTorch warns).
inline int env_num_threads(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  const bool ok = end != text && (*end == '\0' || *end == ',') && errno == 0 && v > 0 && v <= (1 << 20);
  if (!ok) {
    std::fprintf(stderr, "tinytorch: ignoring OMP_NUM_THREADS='%s' (expected a positive integer); using %d threads\n",
                 text, available_cpus());
    return 0;
  }
  return static_cast<int>(v);
}

/// How many processes mpirun started on this machine (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE,
/// MPICH's MPI_LOCALNRANKS), else 1.
inline int local_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* text = std::getenv(name);
    if (text == nullptr) continue;
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end != text && *end == '\0' && v > 0 && v <= (1 << 20)) return static_cast<int>(v);
  }
  return 1;
}

/// The default number of threads: OMP_NUM_THREADS if valid, else available_cpus() shared among
/// the ranks mpirun started on this machine (at least 1 each).
inline int default_num_threads() {
  const int env = env_num_threads(std::getenv("OMP_NUM_THREADS"));
  return env > 0 ? env : std::max(1, available_cpus() / local_ranks());
}

/// True on a pool worker, and on a caller while its parallel_for runs (at::in_parallel_region).
inline bool& in_parallel_region_flag() {
  static thread_local bool flag = false;
  return flag;
}

/// The process-wide pool. One parallel_for uses it at a time (try_acquire); between jobs a worker
/// polls for kSpinMicros, then blocks on a condition variable.
class ThreadPool {
 public:
  using TaskFn = void (*)(void* ctx, int64_t task);
  /// How long a worker that finished a job polls for the next one, and the caller for the
  /// workers' last chunks, before blocking (see the top of this file).
  static constexpr int kSpinMicros = 20;

  static ThreadPool& instance() { return *slot(); }

  int num_threads() {
    const int n = num_threads_.load(std::memory_order_relaxed);
    if (n > 0) return n;
    static const int default_n = default_num_threads();  // decided (an odd OMP_NUM_THREADS reported) once
    return default_n;
  }
  void set_num_threads(int n) { num_threads_.store(n, std::memory_order_relaxed); }

  /// How many jobs have run on the pool (not inline): lets tests see that work was split.
  uint64_t jobs() const { return jobs_.load(std::memory_order_relaxed); }

  /// Claims the pool for one parallel_for; false when another thread holds it.
  bool try_acquire() { return !busy_.exchange(true, std::memory_order_acquire); }
  void release() { busy_.store(false, std::memory_order_release); }

  /// Runs fn(ctx, t) for t in [0, tasks) on the caller and up to tasks-1 workers; returns when all
  /// are done and no worker touches the job any more. Only the holder of try_acquire calls this.
  void run(int64_t tasks, TaskFn fn, void* ctx) {
    std::unique_lock<std::mutex> lock(mutex_);
    const size_t want = static_cast<size_t>(std::min<int64_t>(tasks - 1, num_threads() - 1));
    // Workers start on first use (a failure just means fewer helpers). A new worker starts from
    // the generation before this job's, so it takes part in the job that started it: reading the
    // generation itself, after this call bumps it below, it would sleep through its first job.
    const uint64_t before = generation_.load(std::memory_order_relaxed);
    while (workers_.size() < want) {
      try {
        workers_.emplace_back([this, before] { worker_loop(before); });
      } catch (const std::system_error&) {
        break;
      }
    }
    fn_ = fn;
    ctx_ = ctx;
    tasks_ = tasks;
    next_task_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    open_ = true;
    generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    jobs_.fetch_add(1, std::memory_order_relaxed);
    const size_t wake = std::min(want, workers_.size());
    lock.unlock();
    for (size_t i = 0; i < wake; ++i) wake_.notify_one();

    run_tasks(fn, ctx, tasks);  // the caller takes chunks too

    spin_until([this] { return active_.load(std::memory_order_acquire) == 0; });
    lock.lock();
    open_ = false;  // a worker that wakes from now on skips this job
    done_.wait(lock, [this] { return active_.load(std::memory_order_relaxed) == 0; });
    std::exception_ptr error = error_;
    error_ = nullptr;
    lock.unlock();
    if (error) std::rethrow_exception(error);
  }

 private:
  /// The current pool. After fork() the child gets a new one (the parent's workers do not exist
  /// there; the old pool is leaked, as its mutex may have been held by a thread that is gone).
  static ThreadPool*& slot() {
    static ThreadPool* pool = [] {
#if defined(__linux__)
      pthread_atfork(nullptr, nullptr, [] {
        ThreadPool* fresh = new ThreadPool();
        fresh->num_threads_.store(slot()->num_threads_.load());  // keeps set_num_threads' choice
        slot() = fresh;
      });
#endif
      return new ThreadPool();  // never destroyed: workers may still be asleep in it at exit
    }();
    return pool;
  }

  /// Polls done() for up to kSpinMicros (then the caller blocks on a condition variable).
  template <class Done>
  static void spin_until(const Done& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (;;) {
      for (int i = 0; i < 32; ++i) {
        if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      if (std::chrono::steady_clock::now() >= until) return;
    }
  }

  void run_tasks(TaskFn fn, void* ctx, int64_t tasks) {
    for (int64_t t; (t = next_task_.fetch_add(1, std::memory_order_relaxed)) < tasks;) {
      try {
        fn(ctx, t);
      } catch (...) {
        std::lock_guard<std::mutex> g(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  /// `seen`: the last generation this worker need not run (the one before the job that started it).
  void worker_loop(uint64_t seen) {
    in_parallel_region_flag() = true;  // a parallel_for inside a chunk runs inline
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      lock.unlock();
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      lock.lock();
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      seen = generation_.load(std::memory_order_relaxed);
      if (!open_) continue;  // woke too late: the caller already finished this job
      ++active_;
      const TaskFn fn = fn_;
      void* const ctx = ctx_;
      const int64_t tasks = tasks_;
      lock.unlock();
      run_tasks(fn, ctx, tasks);
      lock.lock();
      if (--active_ == 0) done_.notify_one();
    }
  }

  std::atomic<int> num_threads_{0};  // 0: the default (OMP_NUM_THREADS or the CPUs)
  std::atomic<bool> busy_{false};
  std::atomic<uint64_t> jobs_{0};
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  // The current job (written under mutex_ before the workers are woken).
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::exception_ptr error_;
  bool open_ = false;
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read without it while spinning
  std::atomic<int> active_{0};           // workers inside the current job (changed under mutex_)
};

}  // namespace detail

/// Number of threads intra-op parallelism may use (the caller included); see the top of this
/// file for the default. torch.get_num_threads.
inline int get_num_threads() { return detail::ThreadPool::instance().num_threads(); }

/// Sets the number of threads for intra-op parallelism (matrix products). Takes effect at the
/// next parallel_for; may be called at any time, from any thread. Throws tinytorch::Error when
/// n < 1. torch.set_num_threads.
inline void set_num_threads(int n) {
  TT_CHECK(n > 0, "set_num_threads: expected a positive number of threads, got ", n);
  detail::ThreadPool::instance().set_num_threads(n);
}

/// True inside a parallel_for's chunk (on a worker or on the caller). at::in_parallel_region.
inline bool in_parallel_region() { return detail::in_parallel_region_flag(); }

namespace detail {
/// Runs f(t) for every t in [0, tasks), taken dynamically by the caller and up to
/// get_num_threads() - 1 workers, and returns true; or returns false without calling f at all
/// when that is not possible (tasks < 2, one thread set, a nested call, the pool busy): the caller
/// then does the work itself, as one piece. Rethrows the first exception of f.
template <class F>
bool try_parallel_tasks(int64_t tasks, const F& f) {
  if (tasks < 2 || in_parallel_region()) return false;
  ThreadPool& pool = ThreadPool::instance();
  if (pool.num_threads() < 2 || !pool.try_acquire()) return false;
  struct Region {  // the caller is in the region while its tasks run; the pool is released after
    ThreadPool& pool;
    explicit Region(ThreadPool& p) : pool(p) { in_parallel_region_flag() = true; }
    ~Region() {
      in_parallel_region_flag() = false;
      pool.release();
    }
  } region(pool);
  pool.run(tasks, [](void* ctx, int64_t t) { (*static_cast<const F*>(ctx))(t); }, const_cast<F*>(&f));
  return true;
}
}  // namespace detail

/// Calls f(b, e) for chunks [b, e) covering [begin, end), in parallel (see the top of this file).
/// f must be safe to run concurrently on disjoint chunks. grain_size >= 0: at most
/// ceil((end - begin) / grain_size) chunks; throws tinytorch::Error when it is negative.
/// at::parallel_for.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  TT_CHECK(grain_size >= 0, "parallel_for: expected grain_size >= 0, got ", grain_size);
  if (begin >= end) return;
  const int64_t n = end - begin;
  const int64_t max_tasks = grain_size > 0 ? (n + grain_size - 1) / grain_size : n;
  const int64_t tasks = n <= grain_size ? 1 : std::min<int64_t>(get_num_threads(), max_tasks);
  const int64_t chunk = (n + tasks - 1) / tasks;
  const int64_t used = (n + chunk - 1) / chunk;  // chunks that are not empty
  const bool split = detail::try_parallel_tasks(used, [&](int64_t t) {
    const int64_t b = begin + t * chunk;
    f(b, std::min(end, b + chunk));
  });
  if (!split) f(begin, end);  // small, one thread, nested, or the pool busy: inline, in one piece
}

TT_NAMESPACE_END  // namespace tinytorch
