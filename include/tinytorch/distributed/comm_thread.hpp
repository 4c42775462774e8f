// tinytorch/distributed/comm_thread.hpp — CommThread: one thread that runs communication tasks
// one at a time, in the order they were enqueued, while the main thread computes. It is what a
// CUDA stream of collectives is to PyTorch (NCCL's stream, FSDP's all-gather and reduce-scatter
// streams) on a machine where MPI moves the bytes with the CPU.
//
//   detail::CommThread comm;
//   const uint64_t t = comm.enqueue([&] { pg->all_gather(out, in, n, dtype, ...); });   // returns at once
//   ... compute ...
//   comm.wait(t);      // task t (and every task before it) has completed; rethrows its error
//
// Why a thread: Open MPI progresses a non-blocking collective (MPI_Iallreduce, ...) only inside
// MPI calls, so a collective started and then left alone while backward computes makes no
// progress; a thread blocked in the blocking call makes progress all the time. The tasks run on a
// process group of their own (new_group: a duplicate communicator), so they are never matched
// against a collective the main thread issues meanwhile on the default group; MPI must provide
// MPI_THREAD_MULTIPLE (init_process_group asks for it; DDP and FSDP check).
//
// Order: every rank must enqueue the same collectives in the same order (one thread issues them,
// in FIFO order, so the order of enqueue() is the order on the wire). A task's exception is kept
// and rethrown once by the next wait()/wait_all() on the main thread (the remaining tasks still run:
// a collective that another rank joins must not be skipped on this one).
// Destruction: the thread finishes the queue and is joined; while an exception unwinds and a
// task is still queued or running (a collective that another rank may never join would block
// join() forever, and ProcessGroupGuard is about to abort the job), it is detached instead.
//
// Users: DDP's Reducer (reducer.hpp: the bucket all-reduces), FullyShardedDataParallel
// (fully_sharded_data_parallel.hpp: prefetched all-gathers, reduce-scatters overlapped with backward).
// Chapter: chapters/06-distributed-data-parallel.md (6.6), chapters/13-sharding.md (13.9).
// Reference: PyTorch's c10d Reducer and FSDP streams (torch/distributed/fsdp/_runtime_utils.py:
//   _all_gather_stream, _post_backward_stream); MPI 3.1 §12.4 (MPI_THREAD_MULTIPLE).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {
namespace detail {

class CommThread {
 public:
  CommThread() : state_(std::make_shared<State>()) {
    std::shared_ptr<State> s = state_;  // the thread keeps the queue alive (also when detached)
    thread_ = std::thread([s] { s->loop(); });
  }
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;
  ~CommThread() { shutdown(); }

  /// Queues `task`; returns its ticket (1, 2, ...: the number of tasks enqueued so far).
  uint64_t enqueue(std::function<void()> task) {
    uint64_t ticket;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->tasks.push_back(std::move(task));
      ticket = ++state_->enqueued;
    }
    state_->cv_task.notify_one();
    return ticket;
  }

  /// Blocks until task `ticket` and every task before it have completed; then rethrows the first
  /// error a task threw since the last wait (once).
  void wait(uint64_t ticket) {
    std::exception_ptr err;
    {
      std::unique_lock<std::mutex> lock(state_->mu);
      state_->cv_done.wait(lock, [&] { return state_->completed >= ticket; });
      err = state_->error;
      state_->error = nullptr;
    }
    if (err) std::rethrow_exception(err);
  }
  /// Blocks until every enqueued task has completed (then as wait()).
  void wait_all() { wait(enqueued()); }

  uint64_t enqueued() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->enqueued;
  }
  /// True when task `ticket` has completed (no waiting).
  bool done(uint64_t ticket) const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->completed >= ticket;
  }

  /// Finishes the queue and joins the thread, or (an exception unwinding while a task is queued or
  /// running) detaches it. Returns true when joined. Idempotent.
  bool shutdown() {
    if (!thread_.joinable()) return false;
    bool idle;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->stop = true;
      idle = state_->completed == state_->enqueued;
    }
    state_->cv_task.notify_all();
    if (!idle && std::uncaught_exceptions() > 0) {
      thread_.detach();
      return false;
    }
    thread_.join();
    return true;
  }

 private:
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv_task, cv_done;
    std::deque<std::function<void()>> tasks;
    uint64_t enqueued = 0, completed = 0;
    bool stop = false;
    std::exception_ptr error;

    void loop() {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv_task.wait(lock, [&] { return stop || !tasks.empty(); });
          if (tasks.empty()) return;  // stop requested and nothing left
          task = std::move(tasks.front());
          tasks.pop_front();
        }
        std::exception_ptr err;
        try {
          task();
        } catch (...) {
          err = std::current_exception();
        }
        task = nullptr;  // what it captured is released before it counts as completed
        {
          std::lock_guard<std::mutex> lock(mu);
          if (err && !error) error = err;
          ++completed;
        }
        cv_done.notify_all();
      }
    }
  };
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace detail
}  TT_NAMESPACE_END  // namespace tinytorch::distributed
