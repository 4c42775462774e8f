// tinytorch/distributed/model_agreement.hpp — before DistributedDataParallel moves any data, the
// ranks agree on its options and on the model, or every rank throws the same tinytorch::Error
// (never a hang); then rank 0's values are copied everywhere. Steps 0-2 of DDP's constructor
// (PyTorch's DistributedDataParallel.__init__ and verify_params_across_processes):
//   0. verify_options_across_ranks: the ranks agree on DDPOptions (and that a module was passed)
//      before any check that could throw on one rank only: all-gathered, compared bit for bit,
//      the same error everywhere.
//   1. verify_across_ranks: the ranks agree on the model before any data moves: parameter
//      counts are all-gathered; rank 0 broadcasts every parameter's dtype, requires_grad and
//      sizes; each rank compares; the first index that differs anywhere is agreed by an
//      all-reduce (MIN); the lowest rank that differs there broadcasts its shape and name; and
//      every rank throws the same tinytorch::Error naming the parameter (dotted name, both
//      shapes, both ranks). Never a hang. The same for buffers.
//   2. broadcast_from_rank0: parameters and buffers are broadcast from rank 0 (values are
//      overwritten, not compared).
//
// The math of step 1: n tensors, tensor i described by
//   meta(i) = {dtype + 16 * requires_grad, ndim, size_0, size_1, ...}
//   rank r:  bad_r = the first i with meta_r(i) != meta_0(i), or n if there is none
//   p = min_r bad_r (an all-reduce with ReduceOp::MIN);  p == n: the ranks agree.
// Shapes: the collectives here carry int64 vectors (length first); a string travels as one int64
//   per character.
// Also here: throw_if_any_rank(g, failed, message), a local check made collective (the same error
// on every rank when it fails on some; ZeroRedundancyOptimizer's parameter checks use it), and,
// for programs: check_same_across_ranks(who, {{name, value}, ...}), the same
// agreement for a program's settings (train_mnist checks its flags with it at start-up): every
// rank throws the same error naming each setting that differs, with rank 0's value and the
// first other rank's.
// Chapter: chapters/06-distributed-data-parallel.md (6.5, steps 0-2; 6.11, the flags). Reference:
// torch/nn/parallel/distributed.py (__init__), c10d/reducer.cpp (verify_params_across_processes).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/core/dtype.hpp"
#include "tinytorch/functional.hpp"
#include "tinytorch/distributed/algorithms.hpp"
#include "tinytorch/distributed/buffer_collectives.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/device_staging.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed::detail {

/// Broadcasts a vector<int64_t> from `root` (a rank of g; length first) on group g. A length
/// that cannot be one (negative, or above 2^26: 512 MiB of int64) means the ranks were not in the
/// same collective (one rank sent tensor data where the others expected this length): an error
/// instead of an allocation of garbage size.
inline std::vector<int64_t> broadcast_ints(ProcessGroup& g, const std::vector<int64_t>& v, int root) {
  int64_t len = static_cast<int64_t>(v.size());
  g.broadcast(&len, 1, kInt64, root, Completion::Blocking);
  check(len >= 0 && len <= (int64_t{1} << 26), rank_prefix(), "broadcast_ints: received a length of ", len,
        " from rank ", root, " of group \"", g.name(), "\": the ranks are not in the same collective (a rank called "
        "more or other collectives than the others; TINYTORCH_DISTRIBUTED_DEBUG=DETAIL names the first difference)");
  std::vector<int64_t> out = v;
  out.resize(static_cast<size_t>(len));
  if (len > 0) g.broadcast(out.data(), len, kInt64, root, Completion::Blocking);
  return out;
}

/// Broadcasts a string from `root` on group g (one int64 per character: names are short, and the
/// collectives have no byte dtype).
inline std::string broadcast_string(ProcessGroup& g, const std::string& s, int root) {
  std::vector<int64_t> chars(s.begin(), s.end());
  std::vector<int64_t> got = broadcast_ints(g, chars, root);
  return std::string(got.begin(), got.end());
}



/// The RAII guard that DistributedDataParallel::no_sync() and FullyShardedDataParallel::no_sync()
/// return: the wrapper's "reduce gradients in backward" flag off until destroyed, then restored
/// (so guards nest, as PyTorch's `with model.no_sync():` does).
class NoSyncGuard {
 public:
  explicit NoSyncGuard(bool& require_backward_grad_sync) : flag_(require_backward_grad_sync), previous_(flag_) {
    flag_ = false;
  }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;
  ~NoSyncGuard() { flag_ = previous_; }

 private:
  bool& flag_;
  bool previous_;
};

/// A check that may fail on some ranks only, made on every rank: each rank passes whether it
/// failed and its message. If every rank failed, each throws its own message (a condition they
/// share); if some did, every rank throws the same tinytorch::Error: the message of the lowest
/// failing rank, followed by " (on rank r)". A collective (two all-reduces, and a broadcast when
/// some failed), so a local error does not leave the other ranks waiting in the next collective.
/// `op` names the check in a timeout report (a rank that never made it).
inline void throw_if_any_rank(ProcessGroup& g, bool failed, const std::string& message,
                              const char* op = "throw_if_any_rank") {
  if (g.size() == 1) {
    if (failed) throw_error(message);
    return;
  }
  int64_t v[2] = {failed ? g.rank() : g.size(), failed ? 1 : 0};  // the lowest failing rank; how many failed
  g.all_reduce(&v[0], 1, kInt64, ReduceOp::MIN, Completion::Blocking, op);
  g.all_reduce(&v[1], 1, kInt64, ReduceOp::SUM, Completion::Blocking, op);
  if (v[1] == 0) return;
  if (v[1] == g.size()) throw_error(message);
  const int r = static_cast<int>(v[0]);
  const std::string what = broadcast_string(g, g.rank() == r ? message : std::string(), r);
  throw_error(::tinytorch::detail::str_cat(what, " (on rank ", r, ")"));
}

/// "[3, 4] torch.float32"
inline std::string describe(const std::vector<int64_t>& meta, bool show_requires_grad) {
  // meta = {dtype + 16 * requires_grad, ndim, d0, d1, ...}
  std::string s = "[";
  for (size_t k = 2; k < meta.size(); ++k) s += (k > 2 ? ", " : "") + std::to_string(meta[k]);
  s += "] " + dtype_name(static_cast<DType>(meta[0] % 16));
  if (!show_requires_grad) return s;
  return meta[0] >= 16 ? s + " requires_grad=True" : s + " requires_grad=False";
}

/// Every rank must build its buckets and reduce them the same way, or the bucket all-reduces
/// would not match (a hang or garbage). PyTorch does not check this. This is the constructor's
/// first collective, before any check that could throw on one rank only: the options (as
/// given, bit for bit) and whether a module was passed are all-gathered, and if any differs,
/// every rank throws the same tinytorch::Error naming the option and both values. Afterwards
/// the local checks see the same values everywhere and throw, if at all, on every rank.
inline void verify_options_across_ranks(ProcessGroup& g, bool has_module, Algorithm algorithm, double first_bucket_mb,
                                        double bucket_cap_mb, bool find_unused, bool broadcast_buffers) {
  const int world = g.size();
  if (world == 1) return;
  const char* names[] = {"module (passed or null)", "algorithm", "first_bucket_mb", "bucket_cap_mb",
                         "find_unused_parameters", "broadcast_buffers"};
  auto bits = [](double d) {
    int64_t b = 0;
    std::memcpy(&b, &d, sizeof b);
    return b;
  };
  const int64_t mine[] = {has_module ? 1 : 0,  static_cast<int64_t>(algorithm), bits(first_bucket_mb),
                          bits(bucket_cap_mb), find_unused ? 1 : 0,             broadcast_buffers ? 1 : 0};
  constexpr int K = 6;
  std::vector<int64_t> all(static_cast<size_t>(world) * K);
  g.all_gather(all.data(), mine, K, kInt64, Completion::Blocking);
  for (int r = 1; r < world; ++r) {
    for (int k = 0; k < K; ++k) {
      const int64_t a = all[static_cast<size_t>(k)], b = all[static_cast<size_t>(r) * K + k];
      if (a == b) continue;
      auto show = [&](int64_t v) -> std::string {
        if (k == 0) return v ? "passed" : "null";
        if (k == 1) {
          const char* n = v >= 0 && v <= static_cast<int64_t>(Algorithm::Tree) ? algorithm_name(static_cast<Algorithm>(v))
                                                                                : "?";
          return ::tinytorch::detail::str_cat(n, " (", v, ")");
        }
        if (k == 2 || k == 3) {
          double d = 0;
          std::memcpy(&d, &v, sizeof d);
          return ::tinytorch::detail::str_cat(d);
        }
        return v ? "true" : "false";
      };
      throw_error(::tinytorch::detail::str_cat("DistributedDataParallel: DDPOptions must be the same on every rank, but ",
                                               names[k], " is ", show(a), " on rank 0 and ", show(b), " on rank ", r,
                                               "."));
    }
  }
}

/// Step 1 of the constructor for one kind of tensor ("parameter" or "buffer"): counts, then
/// dtypes and shapes against rank 0's; throws the same message on every rank on a mismatch.
/// `who` opens the message (ZeroRedundancyOptimizer passes its own sentence).
inline void verify_across_ranks(ProcessGroup& g, const std::vector<std::pair<std::string, Tensor>>& tensors,
                                const char* kind,
                                const char* who = "DistributedDataParallel: DDP expects same model across all ranks") {
  const int world = g.size(), rank = g.rank();
  if (world == 1) return;
  // (1) counts, all-gathered: every rank sees every count.
  std::vector<int64_t> counts(static_cast<size_t>(world));
  int64_t mine = static_cast<int64_t>(tensors.size());
  g.all_gather(counts.data(), &mine, 1, kInt64, Completion::Blocking);
  for (int r = 1; r < world; ++r) {
    if (counts[static_cast<size_t>(r)] != counts[0]) {
      std::string all;
      for (int q = 0; q < world; ++q) all += (q ? ", " : "") + std::to_string(counts[static_cast<size_t>(q)]);
      throw_error(::tinytorch::detail::str_cat(
          who, ", but rank 0 has ", counts[0], " ",
          kind, "s while rank ", r, " has inconsistent ", counts[static_cast<size_t>(r)], " ", kind,
          "s (", kind, " counts by rank: [", all, "]). Every rank must build the same model and register its ",
          kind, "s in the same order."));
    }
  }
  // (2) rank 0's {dtype + 16 * requires_grad, ndim, sizes...} for every tensor, flattened; each
  // rank compares. (A parameter frozen on one rank only would give the ranks different buckets.)
  auto meta_of = [](const Tensor& t) {
    std::vector<int64_t> m{static_cast<int64_t>(t.dtype()) + (t.requires_grad() ? 16 : 0), t.dim()};
    for (int64_t d : t.sizes()) m.push_back(d);
    return m;
  };
  std::vector<int64_t> flat;
  for (const auto& nt : tensors) {
    auto m = meta_of(nt.second);
    flat.insert(flat.end(), m.begin(), m.end());
  }
  const std::vector<int64_t> ref = broadcast_ints(g, flat, 0);
  int64_t first_bad = static_cast<int64_t>(tensors.size());
  size_t pos = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (pos + 2 > ref.size()) {
      first_bad = static_cast<int64_t>(i);
      break;
    }
    const size_t len = 2 + static_cast<size_t>(ref[pos + 1]);
    std::vector<int64_t> theirs(ref.begin() + static_cast<std::ptrdiff_t>(pos),
                                ref.begin() + static_cast<std::ptrdiff_t>(std::min(ref.size(), pos + len)));
    if (theirs != meta_of(tensors[i].second)) {
      first_bad = static_cast<int64_t>(i);
      break;
    }
    pos += len;
  }
  // (3) the first bad index anywhere: MIN over ranks.
  int64_t p = first_bad;
  g.all_reduce(&p, 1, kInt64, ReduceOp::MIN, Completion::Blocking);
  if (p == static_cast<int64_t>(tensors.size())) return;
  // (4) the lowest rank that differs at p tells its shape and name; rank 0 tells its own.
  int64_t lowest = first_bad == p ? rank : world;
  g.all_reduce(&lowest, 1, kInt64, ReduceOp::MIN, Completion::Blocking);
  const int bad_rank = static_cast<int>(lowest);
  const size_t pi = static_cast<size_t>(p);
  const std::vector<int64_t> bad_meta = broadcast_ints(g, rank == bad_rank ? meta_of(tensors[pi].second)
                                                                        : std::vector<int64_t>{}, bad_rank);
  const std::vector<int64_t> ref_meta = broadcast_ints(g, rank == 0 ? meta_of(tensors[pi].second)
                                                                 : std::vector<int64_t>{}, 0);
  const std::string bad_name = broadcast_string(g, rank == bad_rank ? tensors[pi].first : std::string(), bad_rank);
  const std::string ref_name = broadcast_string(g, rank == 0 ? tensors[pi].first : std::string(), 0);
  const bool grad_differs = !ref_meta.empty() && !bad_meta.empty() && (ref_meta[0] >= 16) != (bad_meta[0] >= 16);
  throw_error(::tinytorch::detail::str_cat(
      who, ", but ", kind, " ", p, " (\"", ref_name,
      "\") has sizes ", describe(ref_meta, grad_differs), " on rank 0 and sizes ", describe(bad_meta, grad_differs),
      " on rank ", bad_rank,
      bad_name == ref_name ? std::string() : " (named \"" + bad_name + "\" there)",
      ". Every rank must build the same model and register its ", kind, "s in the same order."));
}

/// Step 2: tensor <- the tensor of g's rank 0, for every entry.
inline void broadcast_from_rank0(ProcessGroup& g, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  if (g.size() == 1) return;
  NoGradGuard no_grad;
  for (const auto& nt : tensors) {
    Tensor t = nt.second;
    if (t.numel() == 0) continue;
    // A CUDA tensor goes through a host buffer (the MPI backend moves host memory).
    Tensor c = t.is_contiguous() ? t : t.contiguous();
    HostStage h(c, g.rank() == 0);
    g.broadcast(h.data(), c.numel(), c.dtype(), 0, Completion::Blocking);
    h.upload();
    if (!t.is_contiguous()) t.copy_(c);
  }
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed::detail

TT_NAMESPACE_BEGIN namespace distributed {

/// Checks that every rank passes the same (name, value) pairs, e.g. a program's flags that must
/// match across ranks (batch size, epochs, learning rate, model, ...). A collective: every rank
/// calls it with its own values, in the same order. Values are compared as text; a 64-bit hash of
/// each pair is all-gathered, and the values that differ are broadcast from rank 0 and from the
/// first rank that differs, so that every rank throws the same tinytorch::Error:
///   "train_mnist: the ranks disagree on settings that must match: --lr is 0.1 on rank 0 but 0.2
///    on rank 1; --limit is 4000 on rank 0 but 2000 on rank 1"
/// (PyTorch has no such check: a different --lr per rank silently trains garbage). The number
/// of pairs must agree too (else: the same error naming both counts). World size 1: nothing.
inline void check_same_across_ranks(const std::string& who,
                                    const std::vector<std::pair<std::string, std::string>>& values) {
  ProcessGroup& group = detail::default_group("check_same_across_ranks");
  const int n = group.size();
  if (n == 1) return;
  const auto fnv1a = [](const std::string& s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return static_cast<int64_t>(h);
  };
  const char* op = "check_same_across_ranks";  // what the watchdog's report calls its collectives
  int64_t count = static_cast<int64_t>(values.size());
  std::vector<int64_t> counts(static_cast<size_t>(n));
  group.all_gather(counts.data(), &count, 1, kInt64, Completion::Blocking, op);
  for (int r = 1; r < n; ++r)
    detail::check(counts[r] == counts[0], who, ": the ranks disagree on how many settings must match: rank 0 has ",
                  counts[0], ", rank ", r, " has ", counts[r]);
  std::vector<int64_t> mine(values.size());
  for (size_t i = 0; i < values.size(); ++i) mine[i] = fnv1a(values[i].first + '\0' + values[i].second);
  std::vector<int64_t> all(values.size() * static_cast<size_t>(n));
  group.all_gather(all.data(), mine.data(), count, kInt64, Completion::Blocking, op);
  std::string differ;
  for (size_t i = 0; i < values.size(); ++i) {
    int other = -1;
    for (int r = 1; r < n && other < 0; ++r)
      if (all[static_cast<size_t>(r) * values.size() + i] != all[i]) other = r;
    if (other < 0) continue;
    const std::string name0 = detail::broadcast_string(group, values[i].first, 0);
    const std::string value0 = detail::broadcast_string(group, values[i].second, 0);
    const std::string name_other = detail::broadcast_string(group, values[i].first, other);
    const std::string value_other = detail::broadcast_string(group, values[i].second, other);
    differ += differ.empty() ? "" : "; ";
    if (name0 == name_other)
      differ += name0 + " is " + value0 + " on rank 0 but " + value_other + " on rank " + std::to_string(other);
    else
      differ += "setting " + std::to_string(i) + " is " + name0 + "=" + value0 + " on rank 0 but " + name_other + "=" +
                value_other + " on rank " + std::to_string(other);
  }
  detail::check(differ.empty(), detail::rank_prefix(), who, ": the ranks disagree on settings that must match: ",
                differ);
}

/// check_same_across_ranks for a program all of whose command-line arguments must match
/// (benchmarks): every rank throws "<who>: the ranks disagree on settings that must match: the
/// command line is '--reps 3' on rank 0 but '--reps 5' on rank 1" if argv[1..] differ.
inline void check_same_command_line(const std::string& who, int argc, char** argv) {
  std::string line;
  for (int i = 1; i < argc; ++i) line += (i > 1 ? " " : "") + std::string(argv[i]);
  check_same_across_ranks(who, {{"the command line", "'" + line + "'"}});
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed
