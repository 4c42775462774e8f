// tinytorch/distributed/work.hpp — Work: the handle an asynchronous collective returns.
//
//   Work w = all_reduce_async(buf, n, kFloat32, ReduceOp::AVG);   // starts MPI_Iallreduce
//   ... compute something else ...
//   w.wait();                                                     // MPI_Wait, then AVG's "/ N"
//
// A Work wraps one MPI request plus a "finish" step that must run after the data has arrived
// (dividing by N for AVG, copying into the caller's tensors for all_gather into a list). The
// finish step also owns copies of the tensor handles involved, so the memory MPI writes into
// stays alive until the operation is complete.
//
// Progress: Open MPI moves a non-blocking collective forward only while some thread is inside
// an MPI call. is_completed() (MPI_Test) is such a call; so is wait(). DDP therefore waits on its
// buckets from a communication thread (which needs MPI_THREAD_MULTIPLE).
//
// Copies of a Work share one state (like PyTorch's c10d::Work, an intrusive pointer). If the
// last copy is destroyed before wait(), the destructor waits, so the buffer is never freed under
// MPI's feet (errors found there are printed, since a destructor cannot throw).
//
// Chapter: chapters/06-distributed-data-parallel.md (overlap), 07-all-reduce.md.
// Reference: torch.distributed.Work (wait, is_completed); MPI 3.1 §5.12 (non-blocking collectives).
#pragma once

#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "errors.hpp"

#include "mpi_include.hpp"

namespace tinytorch::distributed {

class Work {
 public:
  /// An already-completed Work (what a world of size 1 returns).
  Work() = default;

#if TINYTORCH_WITH_MPI
  /// Wraps a started MPI request. `op` names the collective for error messages; `finish` runs
  /// once, after the request completes.
  Work(std::string op, MPI_Request request, std::function<void()> finish)
      : state_(std::make_shared<State>()) {
    state_->op = std::move(op);
    state_->request = request;
    state_->finish = std::move(finish);
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
  /// Non-blocking: MPI_Test. Throws tinytorch::Error if MPI reports an error.
  bool is_completed() {
    if (!state_) return true;
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->done) return true;
#if TINYTORCH_WITH_MPI
    int flag = 0;
    int rc = MPI_Test(&state_->request, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      state_->done = true;
      detail::mpi_check(rc, "MPI_Test", state_->op);
    }
    if (!flag) return false;
#endif
    state_->complete();
    return true;
  }

  /// Blocks until the collective has finished on this rank, then runs its finish step.
  /// Calling it again does nothing. Throws tinytorch::Error if MPI reports an error.
  void wait() {
    if (!state_) return;
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->done) return;
#if TINYTORCH_WITH_MPI
    int rc = MPI_Wait(&state_->request, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      state_->done = true;
      detail::mpi_check(rc, "MPI_Wait", state_->op);
    }
#endif
    state_->complete();
  }

 private:
  struct State {
    std::string op;
#if TINYTORCH_WITH_MPI
    MPI_Request request = MPI_REQUEST_NULL;
#endif
    std::function<void()> finish;
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
      // Never let MPI write into memory that is about to be freed: wait (unless an exception is
      // unwinding, when a wait could hang; ProcessGroupGuard is about to abort the job anyway).
      if (std::uncaught_exceptions() > 0) return;
      try {
        if (MPI_Wait(&request, MPI_STATUS_IGNORE) == MPI_SUCCESS) complete();
      } catch (const std::exception& e) {
        std::cerr << detail::rank_prefix() << op << ": error while completing an un-waited Work: "
                  << e.what() << std::endl;
      }
#endif
    }
  };
  std::shared_ptr<State> state_;
};

}  // namespace tinytorch::distributed
