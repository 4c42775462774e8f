// tinytorch/distributed/collectives.hpp — the collectives on Tensors (torch.distributed's API).
//
// N ranks, t_r = rank r's tensor:
//   all_reduce(t, op)                 t_r <- op(t_0, ..., t_{N-1})     in place, every rank
//   all_reduce(t, op, "ring")         the same with a teaching algorithm (algorithms.hpp);
//                                     returns this rank's CommStats
//   broadcast(t, src)                 t_r <- t_src
//   all_gather(list, t)               list[i] <- t_i              list: N tensors shaped like t
//   all_gather(out, t)                out = cat(t_0, ..., t_{N-1})  (all_gather_into_tensor)
//   reduce_scatter(out, in, op)       out_r <- op over ranks of in.flatten()[r*n : (r+1)*n],
//                                     n = out.numel() (reduce_scatter_tensor)
//   barrier(), *_async(...) -> Work   (the Work keeps the tensors alive until it completes)
// Each is the raw-buffer collective of buffer_collectives.hpp on the tensor's memory (the group's
// checks, DETAIL agreement and watchdog apply), writing in place through `const Tensor&` handles.
// CUDA tensors: the MPI backend stages them through host memory (device_staging.hpp), as gloo
// does; with Backend::NCCL all_reduce, broadcast and all_gather into a tensor run on the GPU
// (nccl.hpp), the other forms stage through the host.
// Checked on each rank before any message, a tinytorch::Error naming the collective and the
// values: tensors defined, on a supported device, one device per collective, contiguous, dtypes
// and sizes agreeing, src in range, no int64 AVG. That other ranks passed the same sizes is
// checked only under TINYTORCH_DISTRIBUTED_DEBUG=DETAIL (else MPI may fail with MPI_ERR_TRUNCATE,
// or the watchdog ends the wait); DDP verifies its model across ranks for that reason.
// Chapter: chapters/07-all-reduce.md, 06-distributed-data-parallel.md. Reference:
// torch.distributed (all_reduce, broadcast, all_gather_into_tensor, reduce_scatter_tensor, ...).
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tinytorch/functional.hpp"  // Tensor and its methods (is_contiguous)
#include "tinytorch/tensor.hpp"
#include "tinytorch/distributed/algorithms.hpp"
#include "tinytorch/distributed/buffer_collectives.hpp"
#include "tinytorch/distributed/device_staging.hpp"
#include "tinytorch/distributed/nccl.hpp"  // (empty unless TINYTORCH_WITH_NCCL)
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/distributed/work.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

namespace detail {

/// The local checks every tensor collective makes. `what` names the argument ("tensor",
/// "output", "output_list[1]").
inline void check_tensor(const char* op, const Tensor& t, const char* what = "tensor") {
  require_initialized(op);
  check(t.defined(), rank_prefix(), op, ": ", what, " is an undefined Tensor");
  ops::check_device(t.device(), op);  // a CUDA tensor: staged through host memory (device_staging.hpp)
  check(t.is_contiguous(), rank_prefix(), op, ": ", what, " must be contiguous (sizes ",
        shape_str(t.sizes()), ", strides ", shape_str(t.strides()), "); call .contiguous() first");
}

/// The tensors of one collective must share a device (PyTorch's collectives require it too).
inline void check_same_device(const char* op, const Tensor& a, const char* a_name, const Tensor& b,
                              const char* b_name) {
  check(a.device() == b.device(), rank_prefix(), op, ": ", a_name, " is on ", a.device().str(), " but ", b_name,
        " is on ", b.device().str(), "; the tensors of one collective must be on the same device");
}

inline void check_same_dtype(const char* op, const Tensor& a, const char* a_name, const Tensor& b,
                             const char* b_name) {
  check(a.dtype() == b.dtype(), rank_prefix(), op, ": ", a_name, " has dtype ", dtype_name(a.dtype()), " but ",
        b_name, " has dtype ", dtype_name(b.dtype()));
}

inline void check_output_list(const char* op, const std::vector<Tensor>& list, const Tensor& in) {
  const int n = group().world_size;
  check(static_cast<int>(list.size()) == n, rank_prefix(), op, ": output list has ", list.size(),
        " tensors but world_size is ", n);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string name = "output_list[" + std::to_string(i) + "]";
    check_tensor(op, list[i], name.c_str());
    check_same_dtype(op, list[i], name.c_str(), in, "input");
    check_same_device(op, list[i], name.c_str(), in, "input");
    check(list[i].numel() == in.numel(), rank_prefix(), op, ": ", name, " has ", list[i].numel(),
          " elements (sizes ", shape_str(list[i].sizes()), ") but input has ", in.numel(), " (sizes ",
          shape_str(in.sizes()), ")");
  }
}

/// True when a CUDA tensor's collective goes to NCCL (the group's backend is NCCL) rather than
/// through a host buffer and MPI.
inline bool use_nccl(const Tensor& t) {
#if TINYTORCH_WITH_NCCL
  return t.device().is_cuda() && group().backend == Backend::NCCL;
#else
  (void)t;
  return false;
#endif
}

/// Copies a gathered contiguous host buffer (N blocks of `bytes`) into the output tensors (on
/// the CPU or a CUDA device: memcpy_h2d).
inline void scatter_to_list(const std::vector<Tensor>& list, const char* gathered, size_t bytes) {
  for (size_t i = 0; i < list.size(); ++i)
    if (bytes > 0) copy_from_host(list[i].device(), list[i].raw_data(), gathered + i * bytes, bytes);
}

}  // namespace detail

// ---- all_reduce ---------------------------------------------------------------------------------

/// In place: t <- op over all ranks (MPI_Allreduce). t: any shape, contiguous CPU tensor.
/// Throws tinytorch::Error on a bad argument (before any message) or an MPI failure.
inline void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::SUM) {
  detail::check_tensor("all_reduce", t);
#if TINYTORCH_WITH_NCCL
  if (detail::use_nccl(t)) return nccl_all_reduce(t, op);
#endif
  detail::HostStage h(t);
  all_reduce(h.data(), t.numel(), t.dtype(), op);
  h.upload();
}

/// In place with a teaching algorithm (Algorithm::Ring, ParameterServer, Tree, or MPI).
/// Returns this rank's CommStats (bytes sent/received, messages, steps).
inline CommStats all_reduce(const Tensor& t, ReduceOp op, Algorithm algo, const AlgorithmOptions& opt = {}) {
  detail::check_tensor("all_reduce", t);
  detail::HostStage h(t);
  CommStats stats = all_reduce(h.data(), t.numel(), t.dtype(), op, algo, opt);
  h.upload();
  return stats;
}

/// Same, algorithm by name: "mpi", "ring", "parameter_server", "tree".
inline CommStats all_reduce(const Tensor& t, ReduceOp op, const std::string& algo,
                            const AlgorithmOptions& opt = {}) {
  return all_reduce(t, op, algorithm_from_name(algo), opt);
}

inline CommStats all_reduce(const Tensor& t, ReduceOp op, const char* algo, const AlgorithmOptions& opt = {}) {
  return all_reduce(t, op, algorithm_from_name(algo), opt);
}

/// Starts an in-place all_reduce (MPI_Iallreduce). Do not touch t until Work::wait().
inline Work all_reduce_async(const Tensor& t, ReduceOp op = ReduceOp::SUM) {
  detail::check_tensor("all_reduce_async", t);
  auto h = std::make_shared<detail::HostStage>(t);
  Work w = all_reduce_async(h->data(), t.numel(), t.dtype(), op);
  // t's memory (and the host stage of a CUDA tensor) stays alive until the Work completes; a
  // CUDA tensor gets the result copied back then.
  if (h->staged())
    w.attach(std::make_shared<Tensor>(t), [h] { h->upload(); });
  else
    w.attach(std::make_shared<Tensor>(t));
  return w;
}

// ---- broadcast ----------------------------------------------------------------------------------

/// t <- rank src's t, on every rank (MPI_Bcast). Throws for src outside [0, world_size).
inline void broadcast(const Tensor& t, int src) {
  detail::check_tensor("broadcast", t);
#if TINYTORCH_WITH_NCCL
  if (detail::use_nccl(t)) return nccl_broadcast(t, src);
#endif
  detail::HostStage h(t, get_rank() == src);  // only the source's data is read
  broadcast(h.data(), t.numel(), t.dtype(), src);
  h.upload();
}

/// Starts a broadcast (MPI_Ibcast).
inline Work broadcast_async(const Tensor& t, int src) {
  detail::check_tensor("broadcast_async", t);
  auto h = std::make_shared<detail::HostStage>(t, get_rank() == src);
  Work w = broadcast_async(h->data(), t.numel(), t.dtype(), src);
  if (h->staged())
    w.attach(std::make_shared<Tensor>(t), [h] { h->upload(); });
  else
    w.attach(std::make_shared<Tensor>(t));
  return w;
}

// ---- all_gather ---------------------------------------------------------------------------------

/// out (N * t.numel() elements, any shape) <- [t of rank 0 | t of rank 1 | ...]
/// (PyTorch's all_gather_into_tensor). Throws on dtype or size mismatch.
inline void all_gather(const Tensor& out, const Tensor& t) {
  const char* op = "all_gather";
  detail::check_tensor(op, t, "input");
  detail::check_tensor(op, out, "output");
  detail::check_same_dtype(op, out, "output", t, "input");
  detail::check_same_device(op, out, "output", t, "input");
  const int n = detail::group().world_size;
  detail::check(out.numel() == n * t.numel(), detail::rank_prefix(), op, ": output has ", out.numel(),
                " elements (sizes ", shape_str(out.sizes()), ") but world_size * input.numel() = ", n, " * ",
                t.numel(), " = ", n * t.numel());
#if TINYTORCH_WITH_NCCL
  if (detail::use_nccl(t)) return nccl_all_gather(out, t);
#endif
  detail::HostStage hin(t), hout(out, false);
  all_gather(hout.data(), hin.data(), t.numel(), t.dtype());
  hout.upload();
}

/// PyTorch's name for the single-output-tensor form.
inline void all_gather_into_tensor(const Tensor& out, const Tensor& t) { all_gather(out, t); }

/// list[i] <- rank i's t; list must hold world_size tensors with t's dtype and numel.
inline void all_gather(const std::vector<Tensor>& out_list, const Tensor& t) {
  const char* op = "all_gather";
  detail::check_tensor(op, t, "input");
  detail::check_output_list(op, out_list, t);
  const size_t bytes = static_cast<size_t>(t.numel()) * element_size(t.dtype());
  std::vector<char> gathered(bytes * out_list.size());
  detail::HostStage hin(t);
  all_gather(gathered.data(), hin.data(), t.numel(), t.dtype());
  detail::scatter_to_list(out_list, gathered.data(), bytes);
}

/// Starts all_gather into one tensor (MPI_Iallgather).
inline Work all_gather_async(const Tensor& out, const Tensor& t) {
  const char* op = "all_gather_async";
  detail::check_tensor(op, t, "input");
  detail::check_tensor(op, out, "output");
  detail::check_same_dtype(op, out, "output", t, "input");
  detail::check_same_device(op, out, "output", t, "input");
  const int n = detail::group().world_size;
  detail::check(out.numel() == n * t.numel(), detail::rank_prefix(), op, ": output has ", out.numel(),
                " elements but world_size * input.numel() = ", n * t.numel());
  auto hin = std::make_shared<detail::HostStage>(t);
  auto hout = std::make_shared<detail::HostStage>(out, false);
  Work w = all_gather_async(hout->data(), hin->data(), t.numel(), t.dtype());
  if (hout->staged())
    w.attach(std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{out, t}), [hin, hout] { hout->upload(); });
  else
    w.attach(std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{out, t}));
  return w;
}

/// Starts all_gather into a list; the copies into the list happen in Work::wait().
inline Work all_gather_async(const std::vector<Tensor>& out_list, const Tensor& t) {
  const char* op = "all_gather_async";
  detail::check_tensor(op, t, "input");
  detail::check_output_list(op, out_list, t);
  const size_t bytes = static_cast<size_t>(t.numel()) * element_size(t.dtype());
  auto gathered = std::make_shared<std::vector<char>>(bytes * out_list.size());
  auto hin = std::make_shared<detail::HostStage>(t);
  Work w = all_gather_async(gathered->data(), hin->data(), t.numel(), t.dtype());
  // After completion: copy the gathered blocks into the list (which the lambda keeps alive).
  std::vector<Tensor> outs = out_list;
  w.attach(std::make_shared<Tensor>(t),
           [outs, gathered, hin, bytes] { detail::scatter_to_list(outs, gathered->data(), bytes); });
  return w;
}

// ---- reduce_scatter -----------------------------------------------------------------------------

/// out_r <- op over ranks of the r-th block of `in` (in.numel() == world_size * out.numel();
/// PyTorch's reduce_scatter_tensor). out and in must not share memory.
inline void reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::SUM) {
  const char* name = "reduce_scatter";
  detail::check_tensor(name, in, "input");
  detail::check_tensor(name, out, "output");
  detail::check_same_dtype(name, out, "output", in, "input");
  detail::check_same_device(name, out, "output", in, "input");
  const int n = detail::group().world_size;
  detail::check(in.numel() == n * out.numel(), detail::rank_prefix(), name, ": input has ", in.numel(),
                " elements (sizes ", shape_str(in.sizes()), ") but world_size * output.numel() = ", n, " * ",
                out.numel(), " = ", n * out.numel());
  detail::HostStage hin(in), hout(out, false);
  reduce_scatter(hout.data(), hin.data(), out.numel(), out.dtype(), op);
  hout.upload();
}

/// PyTorch's name for the same operation.
inline void reduce_scatter_tensor(const Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::SUM) {
  reduce_scatter(out, in, op);
}

/// Starts reduce_scatter (MPI_Ireduce_scatter_block).
inline Work reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::SUM) {
  const char* name = "reduce_scatter_async";
  detail::check_tensor(name, in, "input");
  detail::check_tensor(name, out, "output");
  detail::check_same_dtype(name, out, "output", in, "input");
  detail::check_same_device(name, out, "output", in, "input");
  const int n = detail::group().world_size;
  detail::check(in.numel() == n * out.numel(), detail::rank_prefix(), name, ": input has ", in.numel(),
                " elements but world_size * output.numel() = ", n * out.numel());
  auto hin = std::make_shared<detail::HostStage>(in);
  auto hout = std::make_shared<detail::HostStage>(out, false);
  Work w = reduce_scatter_async(hout->data(), hin->data(), out.numel(), out.dtype(), op);
  if (hout->staged())
    w.attach(std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{out, in}), [hin, hout] { hout->upload(); });
  else
    w.attach(std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{out, in}));
  return w;
}

// ---- on a process group of some ranks (new_group(ranks), DeviceMesh) ----------------------------
// The same collectives on `group` instead of the default group; N = group.size(). Only the
// group's members call them. src is a default-group (global) rank, as in PyTorch.

/// In place over the members of `group`: t <- op(t of each member). Throws as all_reduce(t, op).
inline void all_reduce(const Tensor& t, ReduceOp op, ProcessGroup& group) {
  detail::check_tensor("all_reduce", t);
  detail::HostStage h(t);
  group.all_reduce(h.data(), t.numel(), t.dtype(), op, Completion::Blocking);
  h.upload();
}

/// out (group.size() * t.numel() elements) <- [t of group rank 0 | t of group rank 1 | ...].
inline void all_gather(const Tensor& out, const Tensor& t, ProcessGroup& group) {
  const char* op = "all_gather";
  detail::check_tensor(op, t, "input");
  detail::check_tensor(op, out, "output");
  detail::check_same_dtype(op, out, "output", t, "input");
  detail::check_same_device(op, out, "output", t, "input");
  const int n = group.size();
  detail::check(out.numel() == n * t.numel(), detail::rank_prefix(), op, ": output has ", out.numel(),
                " elements (sizes ", shape_str(out.sizes()), ") but group \"", group.name(), "\" size * input.numel() = ",
                n, " * ", t.numel(), " = ", n * t.numel());
  detail::HostStage hin(t), hout(out, false);
  group.all_gather(hout.data(), hin.data(), t.numel(), t.dtype(), Completion::Blocking);
  hout.upload();
}

/// t <- the t of default-group rank `src`, which must be a member of `group`.
inline void broadcast(const Tensor& t, int src, ProcessGroup& group) {
  detail::check_tensor("broadcast", t);
  const int root = get_group_rank(group, src);
  detail::HostStage h(t, group.rank() == root);
  group.broadcast(h.data(), t.numel(), t.dtype(), root, Completion::Blocking);
  h.upload();
}

// ---- point to point -----------------------------------------------------------------------------
// send(t, dst) on one rank, recv(t, src) on rank dst: t's elements travel from src to dst
// (torch.distributed.send / recv / isend / irecv; ProcessGroup::send / recv for the rules: sizes
// checked on the receiver, waits watched, messages between two ranks with one tag in order).
// dst and src are default-group ranks, also when `group` is given (PyTorch's rule); group nullptr
// = the default group. The tensors must be contiguous; a CUDA tensor is staged through host
// memory. Throws tinytorch::Error for an undefined or non-contiguous tensor, a peer outside the
// group or equal to this rank, a tag outside [0, MPI_TAG_UB], a received size that differs from
// t's (on the receiver), or an MPI failure.

namespace detail {
inline ProcessGroup& p2p_group(const char* op, ProcessGroup* group) {
  return group != nullptr ? *group : default_group(op);
}
/// The group rank of default-group rank `peer`, which must be a member of `group`.
inline int p2p_peer(const char* op, const ProcessGroup& group, int peer, const char* what) {
  const int r = group.group_rank_of(peer);
  check(r >= 0, rank_prefix(), op, ": ", what, " rank ", peer, " is not a member of process group \"", group.name(),
        "\"");
  return r;
}
}  // namespace detail

/// Starts sending t to default-group rank dst (MPI_Isend). Do not modify t until Work::wait().
inline Work isend(const Tensor& t, int dst, ProcessGroup* group = nullptr, int tag = 0) {
  const char* op = "isend";
  detail::check_tensor(op, t);
  ProcessGroup& g = detail::p2p_group(op, group);
  auto h = std::make_shared<detail::HostStage>(t);
  Work w = g.send(h->data(), t.numel(), t.dtype(), detail::p2p_peer(op, g, dst, "dst"), tag, Completion::Async, op);
  w.attach(std::make_shared<Tensor>(t), [h] {});
  return w;
}

/// Starts receiving into t from default-group rank src (MPI_Irecv); t holds the data after
/// Work::wait(), which throws if the message had another size.
inline Work irecv(const Tensor& t, int src, ProcessGroup* group = nullptr, int tag = 0) {
  const char* op = "irecv";
  detail::check_tensor(op, t);
  ProcessGroup& g = detail::p2p_group(op, group);
  auto h = std::make_shared<detail::HostStage>(t, false);
  Work w = g.recv(h->data(), t.numel(), t.dtype(), detail::p2p_peer(op, g, src, "src"), tag, Completion::Async, op);
  if (h->staged())
    w.attach(std::make_shared<Tensor>(t), [h] { h->upload(); });
  else
    w.attach(std::make_shared<Tensor>(t));
  return w;
}

/// Sends t to default-group rank dst and waits until the message is delivered or buffered.
inline void send(const Tensor& t, int dst, ProcessGroup* group = nullptr, int tag = 0) {
  const char* op = "send";
  detail::check_tensor(op, t);
  ProcessGroup& g = detail::p2p_group(op, group);
  detail::HostStage h(t);
  g.send(h.data(), t.numel(), t.dtype(), detail::p2p_peer(op, g, dst, "dst"), tag, Completion::Blocking, op);
}

/// Receives into t from default-group rank src; returns src (PyTorch returns the sender's rank).
inline int recv(const Tensor& t, int src, ProcessGroup* group = nullptr, int tag = 0) {
  const char* op = "recv";
  detail::check_tensor(op, t);
  ProcessGroup& g = detail::p2p_group(op, group);
  detail::HostStage h(t, false);
  g.recv(h.data(), t.numel(), t.dtype(), detail::p2p_peer(op, g, src, "src"), tag, Completion::Blocking, op);
  h.upload();
  return src;
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed
