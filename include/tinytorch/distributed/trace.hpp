// tinytorch/distributed/trace.hpp — Trace: a Chrome-trace ("Trace Event Format") recorder, one
// per rank, to see DDP's overlap: forward / backward / each bucket's all-reduce / step.
//
//   auto trace = std::make_shared<dist::Trace>(dist::get_rank(), dist::common_origin_us());
//   dist::DDPOptions opts;
//   opts.trace = trace;                                // DDP records its bucket all-reduces
//   { dist::Trace::Scope s(trace.get(), "forward"); out = ddp->forward(x); }
//   trace->write("/tmp/ddp.rank" + std::to_string(dist::get_rank()) + ".json");
//
// The time axis: an event [begin, end) (Trace::steady_us() values) is written as
//   ts = begin - origin,  dur = end - begin      (microseconds)
// with origin = min over ranks of steady_us() (common_origin_us()), so that the rank files,
// merged into one (chapter 06, 6.7), show the ranks side by side on one axis (pid = rank).
//
// Chapter: chapters/06-distributed-data-parallel.md (6.7 Overlap, in a trace).
// Reference: the Trace Event Format of chrome://tracing and ui.perfetto.dev (complete events,
//   "ph": "X"; metadata events "process_name" / "thread_name").
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/serialization.hpp"
#include "tinytorch/distributed/buffer_collectives.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

/// Records complete events ("ph":"X": name, thread, start, duration) from any thread and writes
/// them as Chrome-trace JSON (open in chrome://tracing or ui.perfetto.dev). pid = rank, tid 0 =
/// the main thread (forward, backward, step, and DDP's finalize with the last bucket's
/// all-reduce), tid 1 = DDP's communication thread (one event per earlier bucket). Times are
/// microseconds of steady_clock (CLOCK_MONOTONIC, shared by all processes of one machine) minus
/// `origin_us`, so the files of all ranks line up; pass the same origin on every rank
/// (common_origin_us()).
class Trace {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Trace(int pid = 0, double origin_us = 0.0) : pid_(pid), origin_us_(origin_us) {
    thread_name(0, "main (forward, backward, step)");
    thread_name(1, "comm thread (bucket all-reduce)");
  }

  /// Microseconds on the steady clock (not shifted by the origin).
  static double steady_us() {
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
  }

  /// An event [begin_us, end_us) (steady_us() values) on thread `tid`; `args` is a JSON object
  /// body such as "\"bytes\": 1024" (may be empty).
  void complete(const std::string& name, const std::string& cat, int tid, double begin_us, double end_us,
                const std::string& args = "") {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({name, cat, tid, begin_us - origin_us_, end_us - begin_us, args});
  }

  /// Names a thread in the viewer.
  void thread_name(int tid, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    thread_names_[tid] = name;
  }

  /// RAII: records [construction, destruction) as one event. A null Trace* records nothing, so
  /// call sites need no `if`:  { auto s = Trace::Scope(trace.get(), "forward"); ... }
  class Scope {
   public:
    Scope(Trace* t, std::string name, std::string cat = "compute", int tid = 0)
        : t_(t), name_(std::move(name)), cat_(std::move(cat)), tid_(tid), begin_(t ? steady_us() : 0.0) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() {
      if (t_) t_->complete(name_, cat_, tid_, begin_, steady_us());
    }

   private:
    Trace* t_;
    std::string name_, cat_;
    int tid_;
    double begin_;
  };

  /// One complete event: ts = begin - origin and dur in microseconds, tid 0 = main thread.
  struct Event {
    std::string name, cat;
    int tid;
    double ts, dur;
    std::string args;
  };

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }
  /// A copy of the events recorded so far, in the order they were recorded.
  std::vector<Event> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

  /// The whole trace as JSON ({"traceEvents": [...], "displayTimeUnit": "ms"}).
  std::string json() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    os << "{\"traceEvents\": [\n";
    os << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << pid_
       << ", \"tid\": 0, \"args\": {\"name\": \"rank " << pid_ << "\"}}";
    for (const auto& [tid, name] : thread_names_)
      os << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << pid_ << ", \"tid\": " << tid
         << ", \"args\": {\"name\": \"" << escape(name) << "\"}}";
    for (const Event& e : events_) {
      os << ",\n{\"name\": \"" << escape(e.name) << "\", \"cat\": \"" << escape(e.cat) << "\", \"ph\": \"X\", \"pid\": "
         << pid_ << ", \"tid\": " << e.tid << ", \"ts\": " << e.ts << ", \"dur\": " << e.dur;
      if (!e.args.empty()) os << ", \"args\": {" << e.args << "}";
      os << "}";
    }
    os << "\n], \"displayTimeUnit\": \"ms\"}\n";
    return os.str();
  }

  /// Writes json() to `path` atomically: first `path.tmp.<pid>`, fsync, then rename(2), so a
  /// reader never sees half a file. Throws tinytorch::Error if the file cannot be written.
  void write(const std::string& path) const {
    ::tinytorch::detail::write_file_atomically(path, json(), "Trace::write");
  }

 private:
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      out += c;
    }
    return out;
  }
  int pid_;
  double origin_us_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::map<int, std::string> thread_names_;
};

/// The earliest Trace::steady_us() over all ranks (an all-reduce; call it on every rank), to be
/// used as every rank's Trace origin so that rank files share one time axis.
inline double common_origin_us() {
  // Integer microseconds are exact in int64.
  int64_t earliest = static_cast<int64_t>(Trace::steady_us());
  all_reduce(&earliest, 1, ReduceOp::MIN);
  return static_cast<double>(earliest);
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed
