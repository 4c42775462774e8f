// tinytorch/distributed/work.hpp — Work: the handle a collective returns, and the watchdog that
// makes every wait end, one way or the other.
//
//   Work w = all_reduce_async(buf, n, kFloat32, ReduceOp::AVG);   // starts MPI_Iallreduce
//   ... compute something else ...
//   w.wait();                                                     // waits, then AVG's "/ N"
//
// A Work holds the MPI requests of one collective and a "finish" step that runs after the data
// has arrived (AVG's division, the copies of all_gather into a list); the finish step owns the
// tensor handles, so the memory MPI writes stays alive. Every collective, the blocking ones
// included, is a non-blocking MPI call finished by Work::wait(): one way of waiting. Copies of a
// Work share one state (PyTorch's c10d::Work); the last one destroyed before wait() waits.
// A wait polls MPI_Testall (Open MPI progresses only inside MPI calls): back to back for 50 us,
// then yielding the core between polls for up to 1 s, then once a millisecond, sleeping: a rank
// waiting for a peer burns no core. MPI's own blocking calls spin at 100% CPU.
// The watchdog: one thread per process watches every wait of the distributed layer (a Work's,
// the arrival before a blocking collective, MPI's blocking calls) against its group's timeout
// (30 minutes, PyTorch's; init_process_group's `timeout`, TINYTORCH_DIST_TIMEOUT=<seconds>). Past
// it the rank prints "Watchdog caught collective operation timeout: all_reduce (sequence number
// 17, 2352 float32 elements, SUM, group "default") ran for ...", waits a second for the other
// ranks' reports and aborts the job (MPI_Abort): a collective one rank never joins cannot be
// cancelled (PyTorch's NCCL watchdog tears down the process the same way). A thread, because a
// rank can also hang inside one of MPI's blocking calls, where no loop of ours runs.
// Chapter: chapters/07-all-reduce.md (7.8, when a rank fails; timeouts), and
// 06-distributed-data-parallel.md (overlap). Reference: torch.distributed.Work; MPI 3.1 5.12
// (non-blocking collectives); ProcessGroupNCCL's watchdog ("Watchdog caught collective ...").
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tinytorch/core/config.hpp"
#include "tinytorch/distributed/errors.hpp"

#include "tinytorch/distributed/mpi_include.hpp"

TT_NAMESPACE_BEGIN namespace distributed {

namespace detail {

using Milliseconds = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

/// The watchdog's verdict: prints the report on this rank, gives the other ranks one second to
/// print theirs, and aborts the job. Never returns.
/// The prefix of a point-to-point operation's description (ProcessGroup::send / recv): the
/// watchdog words its report for one peer instead of a collective.
inline const std::string& p2p_marker() {
  static const std::string m = "point-to-point ";
  return m;
}

[[noreturn]] inline void watchdog_abort(const std::string& what, double waited_ms, Milliseconds timeout) {
  const bool p2p = what.rfind(p2p_marker(), 0) == 0;
  const std::string op = p2p ? what.substr(p2p_marker().size()) : what;
  const std::string why =
      p2p ? std::string("The peer never posted the matching operation (a send for this recv, a recv for this send) "
                        "with this tag: it stopped, died, is stuck elsewhere, or used another tag or peer.\n")
          : std::string("Some rank never joined this collective: it stopped, died, is stuck elsewhere, or called "
                        "another collective") +
                (get_debug_level() == DebugLevel::DETAIL ? ".\n" : " (TINYTORCH_DISTRIBUTED_DEBUG=DETAIL names it).\n");
  // One write per message, so that the reports of ranks timing out together do not interleave.
  std::cerr << rank_prefix() + "Watchdog caught " + (p2p ? "point-to-point" : "collective") +
                   " operation timeout: " + op + " ran for " + std::to_string(static_cast<int64_t>(waited_ms)) +
                   " ms, longer than the timeout of " + std::to_string(timeout.count()) +
                   " ms (the process group's timeout: init_process_group(backend, timeout), TINYTORCH_DIST_TIMEOUT="
                   "<seconds>, or a program's --timeout). " + why
            << std::flush;
  std::this_thread::sleep_for(std::min(timeout, Milliseconds(1000)));
  std::cerr << rank_prefix() + "aborting the job (MPI_Abort) so that the other ranks do not hang\n" << std::flush;
  abort_now(1);
}

/// One thread per process that watches every wait of the distributed layer (registered by a
/// WatchScope for as long as the wait lasts) and calls watchdog_abort on the first that has
/// lasted longer than its timeout. Started by init_process_group when there is more than one
/// rank (with one rank nothing can hang), stopped by destroy_process_group; it wakes ten times
/// a second (or more often for shorter timeouts) and otherwise sleeps.
class Watchdog {
 public:
  struct Entry {
    std::function<std::string()> describe;  ///< "all_reduce (sequence number 3, ...)", built only on timeout
    SteadyClock::time_point start;
    Milliseconds timeout;
  };

  void start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable()) return;
    stop_ = false;
    thread_ = std::thread([this] { loop(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!thread_.joinable()) return;
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void add(Entry* e) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_back(e);
  }

  void remove(Entry* e) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(std::find(entries_.begin(), entries_.end(), e));
  }

  ~Watchdog() { stop(); }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      Milliseconds interval(100);
      const SteadyClock::time_point now = SteadyClock::now();
      for (const Entry* e : entries_) {
        const auto waited = now - e->start;
        // Compared in milliseconds: a timeout of years (or milliseconds::max()) in nanoseconds
        // would overflow.
        if (std::chrono::duration_cast<Milliseconds>(waited) > e->timeout) {
          const std::string what = e->describe ? e->describe() : "a collective";
          lock.unlock();
          watchdog_abort(what, std::chrono::duration<double, std::milli>(waited).count(), e->timeout);
        }
        interval = std::min(interval, std::max(Milliseconds(1), e->timeout / 10));
      }
      cv_.wait_for(lock, interval);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry*> entries_;
  std::thread thread_;
  bool stop_ = false;
};

inline Watchdog& watchdog() {
  static Watchdog w;
  return w;
}

/// RAII: the enclosing wait is watched by the watchdog from construction to destruction.
class WatchScope {
 public:
  WatchScope(std::function<std::string()> describe, Milliseconds timeout)
      : entry_{std::move(describe), SteadyClock::now(), timeout} {
    watchdog().add(&entry_);
  }
  ~WatchScope() { watchdog().remove(&entry_); }
  WatchScope(const WatchScope&) = delete;
  WatchScope& operator=(const WatchScope&) = delete;

 private:
  Watchdog::Entry entry_;
};

#if TINYTORCH_WITH_MPI
/// Polls MPI_Testall until all `n` requests have completed (see the file comment for the three
/// phases: spin, yield, sleep). No timeout here: the caller holds a WatchScope. Throws
/// tinytorch::Error naming `op` if MPI reports an error — except that with `statuses` (n of
/// them) a request that completed in error (MPI_ERR_IN_STATUS: e.g. a receive whose message was
/// larger than its buffer, MPI_ERR_TRUNCATE) returns normally with the error in its status, for
/// the caller to explain (ProcessGroup::recv).
inline void poll_requests(MPI_Request* requests, int n, const char* op, MPI_Status* statuses = MPI_STATUSES_IGNORE) {
  const SteadyClock::time_point start = SteadyClock::now();
  for (;;) {
    int done = 0;
    const int rc = MPI_Testall(n, requests, &done, statuses);
    if (rc == MPI_ERR_IN_STATUS && done && statuses != MPI_STATUSES_IGNORE) return;
    mpi_check(rc, "MPI_Testall", op);
    if (done) return;
    const auto waited = SteadyClock::now() - start;
    if (waited < std::chrono::microseconds(50)) continue;
    if (waited < std::chrono::seconds(1))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(Milliseconds(1));
  }
}

/// poll_requests under the watchdog.
inline void wait_requests(MPI_Request* requests, int n, Milliseconds timeout, const char* op,
                          std::function<std::string()> what, MPI_Status* statuses = MPI_STATUSES_IGNORE) {
  WatchScope watch(std::move(what), timeout);
  poll_requests(requests, n, op, statuses);
}
#endif

}  // namespace detail

class Work {
 public:
  /// An already-completed Work (what a world of size 1 returns).
  Work() = default;

#if TINYTORCH_WITH_MPI
  /// Wraps started MPI requests. `op` names the collective for error messages, `describe`
  /// gives the watchdog's description ("all_reduce (sequence number 3, ...)"), `timeout` is
  /// the process group's; `finish` runs once, after every request has completed.
  Work(std::string op, std::vector<MPI_Request> requests, std::function<void()> finish,
       std::function<std::string()> describe, detail::Milliseconds timeout)
      : state_(std::make_shared<State>()) {
    state_->op = std::move(op);
    state_->requests = std::move(requests);
    state_->finish = std::move(finish);
    state_->describe = std::move(describe);
    state_->timeout = timeout;
  }

  /// The same, plus `check_statuses`: called with the requests' MPI_Status once they have all
  /// completed (before `finish`), also when one completed in error (MPI_ERR_IN_STATUS); it throws
  /// tinytorch::Error to report what the statuses say (a receive's message size, checked
  /// against what was posted: ProcessGroup::recv).
  Work(std::string op, std::vector<MPI_Request> requests, std::function<void()> finish,
       std::function<std::string()> describe, detail::Milliseconds timeout,
       std::function<void(const std::vector<MPI_Status>&)> check_statuses)
      : Work(std::move(op), std::move(requests), std::move(finish), std::move(describe), timeout) {
    state_->statuses.resize(state_->requests.size());
    state_->check_statuses = std::move(check_statuses);
  }
#endif

  /// Attaches what must outlive the operation — `keep_alive` (e.g. the tensors whose memory MPI
  /// reads and writes) is released, and `after` runs, once the operation completes (immediately
  /// if it already has). Used by the Tensor forms in collectives.hpp. Returns *this.
  Work& attach(std::shared_ptr<void> keep_alive, std::function<void()> after = nullptr) {
    if (!state_) {
      if (after) after();
      return *this;
    }
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->done) {
      if (after) after();
      return *this;
    }
    if (keep_alive) state_->keep_alive.push_back(std::move(keep_alive));
    if (after) {
      state_->finish = [first = std::move(state_->finish), second = std::move(after)] {
        if (first) first();
        second();
      };
    }
    return *this;
  }

  /// True once the collective has finished on this rank (and its finish step has run).
  /// Non-blocking: MPI_Testall. Throws tinytorch::Error if MPI reports an error.
  bool is_completed() {
    if (!state_) return true;
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->done) return true;
#if TINYTORCH_WITH_MPI
    int flag = 0;
    int rc = MPI_Testall(static_cast<int>(state_->requests.size()), state_->requests.data(), &flag,
                         state_->status_ptr());
    if (rc == MPI_ERR_IN_STATUS && flag && state_->check_statuses) rc = MPI_SUCCESS;  // explained below
    if (rc != MPI_SUCCESS) {
      state_->done = true;
      detail::mpi_check(rc, "MPI_Testall", state_->op);
    }
    if (!flag) return false;
    state_->run_check_statuses();
#endif
    state_->complete();
    return true;
  }

  /// Blocks until the collective has finished on this rank, then runs its finish step; past
  /// the timeout, the watchdog aborts the job (file comment). Calling it again does nothing.
  /// Throws tinytorch::Error if MPI reports an error.
  void wait() {
    if (!state_) return;
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->done) return;
#if TINYTORCH_WITH_MPI
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
      state_->done = true;
      detail::throw_error(detail::rank_prefix() + state_->op +
                          ": Work::wait after MPI was finalized (destroy_process_group): the collective can no "
                          "longer complete; wait for every Work before destroying the process group");
    }
    try {
      detail::wait_requests(state_->requests.data(), static_cast<int>(state_->requests.size()), state_->timeout,
                            state_->op.c_str(), state_->describe, state_->status_ptr());
    } catch (...) {
      state_->done = true;
      throw;
    }
    state_->run_check_statuses();
#endif
    state_->complete();
  }

 private:
  struct State {
    std::string op;
#if TINYTORCH_WITH_MPI
    std::vector<MPI_Request> requests;
    std::vector<MPI_Status> statuses;  ///< filled only when check_statuses is set
    std::function<void(const std::vector<MPI_Status>&)> check_statuses;

    MPI_Status* status_ptr() { return check_statuses ? statuses.data() : MPI_STATUSES_IGNORE; }

    /// After completion: check_statuses, which may throw (the Work is done either way).
    void run_check_statuses() {
      if (!check_statuses) return;
      auto check = std::move(check_statuses);
      check_statuses = nullptr;
      try {
        check(statuses);
      } catch (...) {
        complete();  // the operation is over: its finish step and what it kept alive go too
        throw;
      }
    }
#endif
    std::function<void()> finish;
    std::function<std::string()> describe;
    detail::Milliseconds timeout{0};
    std::vector<std::shared_ptr<void>> keep_alive;
    bool done = false;
    std::mutex mutex;

    void complete() {
      done = true;
      if (finish) {
        auto f = std::move(finish);
        finish = nullptr;
        f();
      }
      keep_alive.clear();
    }

    ~State() {
      if (done) return;
#if TINYTORCH_WITH_MPI
      // Never let MPI write into memory that is about to be freed: wait, also while an exception
      // unwinds (the program may catch it and go on). A peer that never joins cannot hang us:
      // the wait is watched, and the watchdog ends the job after the timeout.
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized) {
        std::cerr << detail::rank_prefix() + op + ": a Work destroyed after MPI was finalized never completed\n";
        return;
      }
      try {
        detail::wait_requests(requests.data(), static_cast<int>(requests.size()), timeout, op.c_str(), describe,
                              status_ptr());
        run_check_statuses();
        complete();
      } catch (const std::exception& e) {
        std::cerr << detail::rank_prefix() << op << ": error while completing an un-waited Work: " << e.what()
                  << std::endl;
      }
#endif
    }
  };
  std::shared_ptr<State> state_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed
