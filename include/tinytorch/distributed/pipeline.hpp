// tinytorch/distributed/pipeline.hpp — pipeline parallelism on real ranks: a model cut into P
// stages, stage s on rank s of a process group, training a batch as M micro-batches under the
// GPipe or the 1F1B schedule of pipeline_schedule.hpp.
//
// PipelineStage::step runs the ops of pipeline::stage_order(schedule, P, M, s) in order:
//   F(m)  x = the micro-batch (stage 0) or recv(activation of m from stage s-1), made a leaf that
//         requires grad; y = module(x); last stage: loss_m = loss_fn(y, target_m) / M; others:
//         send y to stage s+1.
//   B(m)  last stage: loss_m.backward(); others: y.backward(recv(dL/dy of m from stage s+1)).
//         Then (s > 0) send x.grad to stage s-1.
// The .grad of the parameters add up over the M backwards: after step() each stage holds the
// gradient of the mean loss over the batch, what one process computes on the whole batch.
// Messages (ProcessGroup::send / recv: watched, the size checked): activations tag 0, gradients
// tag 1, in micro-batch order between two stages. A send blocks, except that a send followed by a
// receive from the same neighbour (1F1B's steady state) are posted and waited for together
// (Megatron's send_forward_recv_backward): one after the other, both neighbours would deadlock.
// The constructor runs the module once on `example_input` (no autograd) and the stages
// all-gather what each sends: a mismatch between stage s's output and stage s+1's input, or a
// module that throws on its example, is the same tinytorch::Error on every rank. Stages exchange
// CPU tensors. PipelineStepStats: each stage's busy time over the step's wall time (bounded by
// M / (M + P - 1), the bubble) and the most micro-batches whose activations it kept at once
// (GPipe: M; 1F1B: at most P - s). Errors also: M < 1, the wrong number of inputs or targets, an
// output of the wrong shape at run time (and its neighbour's receive), those of send / recv.
// Chapter: chapters/12-model-parallelism.md (12.6, 12.7). Reference: GPipe (Huang et al., 2019);
// Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM" (2021, 1F1B); Megatron-LM's schedules.py and p2p_communication.py;
// torch.distributed.pipelining; picotron's pipeline_parallel.py.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/functional.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/tensor.hpp"
#include "tinytorch/distributed/collectives.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/model_agreement.hpp"  // broadcast_string
#include "tinytorch/distributed/pipeline_schedule.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/distributed/work.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

/// What one PipelineStage::step measured on this stage.
struct PipelineStepStats {
  double loss = 0.0;           ///< the mean loss over the micro-batches (from the last stage, on every rank)
  double busy_seconds = 0.0;   ///< time in this stage's forwards and backwards
  double wall_seconds = 0.0;   ///< the whole step on this stage
  int64_t peak_in_flight = 0;  ///< most micro-batches whose activations were kept at once
  double busy_fraction() const { return wall_seconds > 0 ? busy_seconds / wall_seconds : 0.0; }
};

class PipelineStage {
 public:
  using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

  /// Stage group.rank() of group.size(), running `module`. example_input: a micro-batch's input
  /// as this stage receives it (stage 0: the data; the others: a tensor of the activation's shape
  /// and dtype, e.g. zeros). A collective of the group (the shape check).
  PipelineStage(std::shared_ptr<nn::Module> module, ProcessGroup& group, const Tensor& example_input)
      : module_(std::move(module)), group_(group.shared_from_this()), stage_(group.rank()), stages_(group.size()) {
    detail::check(module_ != nullptr, detail::rank_prefix(), "PipelineStage: module is null");
    detail::check(example_input.defined(), detail::rank_prefix(), "PipelineStage: example_input is undefined");
    Tensor out;
    std::string failure;  // the module refused its example input: every rank must hear of it
    try {
      NoGradGuard no_grad;
      out = module_->forward(example_input);
      detail::check(out.device().is_cpu(), "the module's output is on ", out.device().str(),
                    " (pipeline stages exchange CPU tensors)");
    } catch (const std::exception& e) {
      failure = describe(example_input.sizes(), example_input.dtype()) + ": " + e.what();
    }
    in_shape_ = example_input.sizes();
    in_dtype_ = example_input.dtype();
    out_shape_ = failure.empty() ? out.sizes() : Shape{};
    out_dtype_ = failure.empty() ? out.dtype() : kFloat32;
    check_neighbours(failure);
  }

  int stage() const { return stage_; }
  int num_stages() const { return stages_; }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == stages_ - 1; }
  nn::Module& module() { return *module_; }

  /// One training step over `microbatches` micro-batches (see the file comment). inputs: the M
  /// micro-batches' inputs on stage 0 (ignored elsewhere); targets: their targets on the last
  /// stage (ignored elsewhere). Gradients are added to the parameters' .grad (zero them before).
  /// A collective of the group: every stage calls it with the same M and schedule.
  PipelineStepStats step(int64_t microbatches, const std::vector<Tensor>& inputs, const std::vector<Tensor>& targets,
                         const LossFn& loss_fn, pipeline::Schedule schedule) {
    const int64_t M = microbatches;
    check_microbatches("PipelineStage::step", M, inputs, targets, loss_fn);
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    PipelineStepStats stats;
    std::vector<Tensor> x(static_cast<size_t>(M)), y(static_cast<size_t>(M)), loss(static_cast<size_t>(M));
    int64_t in_flight = 0;
    double loss_sum = 0.0;
    Pending pending;  // a send not yet posted (see flush / exchange)
    auto busy = [&](auto&& work) {
      const auto t0 = Clock::now();
      work();
      stats.busy_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    };

    for (const pipeline::Op& op : pipeline::stage_order(schedule, stages_, M, stage_)) {
      const auto m = static_cast<size_t>(op.microbatch);
      if (op.forward) {
        if (is_first()) {
          flush(pending);
          x[m] = inputs[m];
        } else {
          x[m] = empty(in_shape_, TensorOptions(in_dtype_));
          exchange(pending, x[m], stage_ - 1, kActivationTag);
          x[m].requires_grad_(true);
        }
        busy([&] {
          y[m] = module_->forward(x[m]);
          if (is_last()) loss[m] = loss_fn(y[m], targets[m]) / static_cast<double>(M);
        });
        detail::check(y[m].sizes() == out_shape_ && y[m].dtype() == out_dtype_, detail::rank_prefix(),
                      "PipelineStage::step: stage ", stage_, " produced ", describe(y[m].sizes(), y[m].dtype()),
                      " for micro-batch ", m, " but the stages agreed on ", describe(out_shape_, out_dtype_));
        if (!is_last()) pending = {y[m].detach().contiguous(), stage_ + 1, kActivationTag};
        stats.peak_in_flight = std::max(stats.peak_in_flight, ++in_flight);
      } else {
        Tensor grad;
        if (!is_last()) {
          grad = empty(out_shape_, TensorOptions(out_dtype_));
          exchange(pending, grad, stage_ + 1, kGradientTag);
        } else {
          flush(pending);
        }
        busy([&] {
          if (is_last()) {
            loss_sum += loss[m].item<double>();
            loss[m].backward();
          } else {
            y[m].backward(grad);
          }
        });
        if (!is_first()) {
          Tensor gx = x[m].grad();
          detail::check(gx.defined(), detail::rank_prefix(), "PipelineStage::step: stage ", stage_,
                        "'s input got no gradient (its module does not use its input?)");
          pending = {gx.contiguous(), stage_ - 1, kGradientTag};
        }
        x[m] = Tensor();  // this micro-batch's activations are freed
        y[m] = Tensor();
        loss[m] = Tensor();
        --in_flight;
      }
    }
    flush(pending);
    // Every stage reports the loss, which only the last one knows.
    if (stages_ > 1) group_->broadcast(&loss_sum, 1, kFloat64, stages_ - 1, Completion::Blocking, "pipeline loss");
    stats.loss = loss_sum;
    stats.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return stats;
  }

  /// The mean loss over `microbatches` micro-batches without autograd (forwards only, in order:
  /// evaluation). Same arguments and rules as step(); returns the loss on every rank.
  double evaluate(int64_t microbatches, const std::vector<Tensor>& inputs, const std::vector<Tensor>& targets,
                  const LossFn& loss_fn) {
    const int64_t M = microbatches;
    check_microbatches("PipelineStage::evaluate", M, inputs, targets, loss_fn);
    NoGradGuard no_grad;
    double loss_sum = 0.0;
    for (int64_t m = 0; m < M; ++m) {
      Tensor x = is_first() ? inputs[static_cast<size_t>(m)] : empty(in_shape_, TensorOptions(in_dtype_));
      if (!is_first())
        group_->recv(x.raw_data(), x.numel(), x.dtype(), stage_ - 1, kActivationTag, Completion::Blocking,
                     "pipeline recv");
      const Tensor y = module_->forward(x).contiguous();
      if (is_last())
        loss_sum += loss_fn(y, targets[static_cast<size_t>(m)]).item<double>() / static_cast<double>(M);
      else
        group_->send(y.raw_data(), y.numel(), y.dtype(), stage_ + 1, kActivationTag, Completion::Blocking,
                     "pipeline send");
    }
    if (stages_ > 1) group_->broadcast(&loss_sum, 1, kFloat64, stages_ - 1, Completion::Blocking, "pipeline loss");
    return loss_sum;
  }

 private:
  static constexpr int kActivationTag = 0;

  /// step's and evaluate's local checks of their arguments.
  void check_microbatches(const char* op, int64_t M, const std::vector<Tensor>& inputs,
                          const std::vector<Tensor>& targets, const LossFn& loss_fn) const {
    detail::check(M >= 1, detail::rank_prefix(), op, ": micro-batches must be >= 1, got ", M);
    detail::check(!is_first() || static_cast<int64_t>(inputs.size()) == M, detail::rank_prefix(), op,
                  ": stage 0 needs ", M, " micro-batch inputs, got ", inputs.size());
    detail::check(!is_last() || static_cast<int64_t>(targets.size()) == M, detail::rank_prefix(), op,
                  ": the last stage needs ", M, " micro-batch targets, got ", targets.size());
    detail::check(!is_last() || loss_fn != nullptr, detail::rank_prefix(), op, ": no loss function");
  }
  static constexpr int kGradientTag = 1;

  struct Pending {
    Tensor data;
    int peer = -1;
    int tag = 0;
  };

  /// Posts the pending send and waits for it.
  void flush(Pending& p) {
    if (!p.data.defined()) return;
    group_->send(p.data.raw_data(), p.data.numel(), p.data.dtype(), p.peer, p.tag, Completion::Blocking,
                 "pipeline send");
    p = Pending{};
  }

  /// Receives `into` from `peer`; a pending send to the same peer goes out at the same time.
  void exchange(Pending& p, Tensor& into, int peer, int tag) {
    if (p.data.defined() && p.peer == peer) {
      Work s = group_->send(p.data.raw_data(), p.data.numel(), p.data.dtype(), p.peer, p.tag, Completion::Async,
                            "pipeline send");
      Work r = group_->recv(into.raw_data(), into.numel(), into.dtype(), peer, tag, Completion::Async, "pipeline recv");
      r.wait();
      s.wait();
      p = Pending{};
      return;
    }
    flush(p);
    group_->recv(into.raw_data(), into.numel(), into.dtype(), peer, tag, Completion::Blocking, "pipeline recv");
  }

  static std::string describe(const Shape& s, DType d) { return shape_str(s) + " " + dtype_name(d); }

  /// All-gathers every stage's input and output shapes (and whether its module ran); throws the
  /// same error on every rank when a stage's module failed on its example input, or stage s's
  /// output is not stage s+1's input.
  void check_neighbours(const std::string& failure) {
    constexpr int kMaxDims = 8;
    constexpr int kFields = 2 * (kMaxDims + 2) + 1;
    detail::check(static_cast<int>(in_shape_.size()) <= kMaxDims && static_cast<int>(out_shape_.size()) <= kMaxDims,
                  detail::rank_prefix(), "PipelineStage: activations of more than ", kMaxDims, " dims");
    auto pack = [](std::vector<int64_t>& v, const Shape& s, DType d) {
      v.push_back(static_cast<int64_t>(d));
      v.push_back(static_cast<int64_t>(s.size()));
      for (int k = 0; k < kMaxDims; ++k) v.push_back(k < static_cast<int>(s.size()) ? s[static_cast<size_t>(k)] : 0);
    };
    std::vector<int64_t> mine;
    pack(mine, in_shape_, in_dtype_);
    pack(mine, out_shape_, out_dtype_);
    mine.push_back(failure.empty() ? 0 : 1);
    std::vector<int64_t> all(static_cast<size_t>(kFields * stages_));
    group_->all_gather(all.data(), mine.data(), kFields, kInt64, Completion::Blocking, "PipelineStage shapes");
    for (int s = 0; s < stages_; ++s) {
      if (all[static_cast<size_t>(s * kFields + kFields - 1)] == 0) continue;
      const std::string why = detail::broadcast_string(*group_, failure, s);  // the failing stage tells
      detail::throw_error(::tinytorch::detail::str_cat(
          detail::rank_prefix(), "PipelineStage: stage ", s, " cannot run its module on its example_input ", why));
    }
    auto unpack = [&](int stage, int which) {
      const int64_t* f = all.data() + stage * kFields + which * (kMaxDims + 2);
      Shape s;
      for (int k = 0; k < f[1]; ++k) s.push_back(f[2 + k]);
      return describe(s, static_cast<DType>(f[0]));
    };
    for (int s = 1; s < stages_; ++s) {
      const auto dtype = static_cast<DType>(all[static_cast<size_t>(s * kFields)]);
      detail::check(dtype == kFloat32 || dtype == kFloat64, detail::rank_prefix(), "PipelineStage: stage ", s,
                    " expects activations of ", unpack(s, 0), "; activations between stages must be floating "
                    "point (their gradients travel back)");
    }
    for (int s = 0; s + 1 < stages_; ++s) {
      const std::string sends = unpack(s, 1), expects = unpack(s + 1, 0);
      detail::check(sends == expects, detail::rank_prefix(), "PipelineStage: stage ", s, " sends activations of ",
                    sends, " but stage ", s + 1, " expects ", expects,
                    " (its example_input); the stages of a pipeline must agree on the shapes between them");
    }
  }

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;  ///< kept alive by the stage
  int stage_, stages_;
  Shape in_shape_, out_shape_;
  DType in_dtype_ = kFloat32, out_dtype_ = kFloat32;
};

}  TT_NAMESPACE_END  // namespace tinytorch::distributed
