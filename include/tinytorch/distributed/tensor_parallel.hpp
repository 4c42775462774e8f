// tinytorch/distributed/tensor_parallel.hpp — tensor (intra-layer) parallelism, Megatron-LM's way:
// one Linear's weight split over the P ranks of a process group, each rank computing its part.
//
// A Linear y = x W^T + b, W (out, in), split two ways:
//   ColumnParallelLinear  rank r holds W_r (out/P, in) and b_r: y_r = x W_r^T + b_r, the r-th block
//                         of y's last dim. Needs all of x; gives a slice of y.
//   RowParallelLinear     rank r holds W_r (out, in/P): y_r = x_r W_r^T from its slice x_r of x;
//                         y = sum_r y_r + b needs an all-reduce. b is whole on every rank.
// Megatron's MLP is x -> [f] -> Column -> gelu -> Row -> [g] -> y (gelu acts on each rank's slice);
// attention splits by heads the same way. The conjugate operators (autograd::Function<T>):
//   f = copy_to_tensor_parallel_region       forward: identity      backward: all-reduce (sum)
//   g = reduce_from_tensor_parallel_region   forward: all-reduce    backward: identity
// (x feeds every W_r, so dL/dx = sum_r dL/dy_r W_r; y = sum_r y_r, so dL/dy_r = dL/dy). Also
// gather_from_ (all-gather; backward: keep this rank's slice) and scatter_to_tensor_parallel_region.
// Per transformer block and step: 4 all-reduces of B*T*C elements (16 B T C bytes of float32),
// whatever P is; tensor_parallel_stats() counts what these operators send.
// Shapes: x (..., in); Column gives (..., out/P) (or (..., out) with gather_output); Row takes
// (..., in/P) (or (..., in) when input_is_parallel is false) and gives (..., out). Both are built
// from a whole nn::Linear, the same on every rank, so a split model starts from the single-process
// weights (as Megatron's _initialize_affine_weight_cpu). A Column may split its outputs as
// `sections` equal parts (attention's fused [q | k | v]): rank r keeps block r of each.
// Errors (tinytorch::Error, on every rank of the group): a size P does not divide (out, or
// out/sections, for Column; in for Row), naming the layer, the size and P; an input whose last dim
// is not the layer's.
// Chapter: chapters/12-model-parallelism.md (12.7). Reference: Shoeybi et al., "Megatron-LM"
// (2019), section 3 and figure 3; megatron/core/tensor_parallel/layers.py and mappings.py.
#pragma once

#include <algorithm>
#include <any>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinytorch/autograd/function.hpp"
#include "tinytorch/functional.hpp"
#include "tinytorch/nn/linear.hpp"
#include "tinytorch/nn/module.hpp"
#include "tinytorch/tensor.hpp"
#include "tinytorch/distributed/clip_grad.hpp"
#include "tinytorch/distributed/collectives.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace distributed {

/// What the tensor-parallel operators of this process have communicated since the last reset.
struct TensorParallelStats {
  int64_t all_reduces = 0;            ///< f backward + g forward calls
  int64_t all_reduce_elements = 0;    ///< elements all-reduced, summed over calls
  int64_t all_reduce_bytes = 0;       ///< the same in bytes (payload: elements * element size)
  int64_t all_gathers = 0;            ///< gather forward + scatter backward calls
  int64_t all_gather_elements = 0;    ///< elements this rank contributed to them
};

/// This process's counters (one set for all groups). Reset with tensor_parallel_stats() = {}.
inline TensorParallelStats& tensor_parallel_stats() {
  static TensorParallelStats stats;
  return stats;
}

namespace detail {

inline ProcessGroup* saved_group(autograd::AutogradContext* ctx) {
  return std::any_cast<ProcessGroup*>(ctx->saved_objects.at("group"));
}

/// A contiguous copy of t, all-reduced (SUM) over `group`, counted in the stats.
inline Tensor tp_all_reduce(const Tensor& t, ProcessGroup& group) {
  Tensor out = t.contiguous();
  if (out.impl() == t.impl()) out = out.clone();
  if (group.size() > 1) all_reduce(out, ReduceOp::SUM, group);
  auto& s = tensor_parallel_stats();
  s.all_reduces += 1;
  s.all_reduce_elements += out.numel();
  s.all_reduce_bytes += out.numel() * static_cast<int64_t>(element_size(out.dtype()));
  return out;
}

/// (..., n) on each rank -> (..., P n): the ranks' tensors side by side along the last dim.
inline Tensor tp_all_gather_last(const Tensor& t, ProcessGroup& group) {
  const Tensor x = t.contiguous();
  auto& s = tensor_parallel_stats();
  s.all_gathers += 1;
  s.all_gather_elements += x.numel();
  if (group.size() == 1) return x.clone();
  Shape stacked = x.sizes();
  stacked.insert(stacked.begin(), group.size());
  Tensor all = empty(stacked, TensorOptions(x.dtype()).device(x.device()));  // (P, ..., n)
  all_gather(all, x, group);
  std::vector<Tensor> parts;
  for (int k = 0; k < group.size(); ++k) parts.push_back(all.select(0, k));
  return cat(parts, -1);
}

/// Block `rank` of `parts` equal blocks of t's last dim, contiguous.
inline Tensor last_dim_block(const Tensor& t, int64_t parts, int64_t rank) {
  const int64_t n = t.size(-1) / parts;
  return t.narrow(-1, rank * n, n).contiguous();
}

}  // namespace detail

/// Megatron's f: the identity in forward; backward all-reduces (sums) the gradient over `group`.
struct CopyToTensorParallelRegion : autograd::Function<CopyToTensorParallelRegion> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, ProcessGroup* group) {
    ctx->saved_objects["group"] = group;
    return x;
  }
  static autograd::tensor_list backward(autograd::AutogradContext* ctx, autograd::tensor_list grads) {
    return {detail::tp_all_reduce(grads[0], *detail::saved_group(ctx)), Tensor()};
  }
};

/// Megatron's g: all-reduces (sums) over `group` in forward; the identity in backward.
struct ReduceFromTensorParallelRegion : autograd::Function<ReduceFromTensorParallelRegion> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x, ProcessGroup* group) {
    return detail::tp_all_reduce(x, *group);
  }
  static autograd::tensor_list backward(autograd::AutogradContext*, autograd::tensor_list grads) {
    return {grads[0], Tensor()};
  }
};

/// All-gather along the last dim in forward ((..., n) -> (..., P n)); backward keeps this rank's
/// block of the gradient.
struct GatherFromTensorParallelRegion : autograd::Function<GatherFromTensorParallelRegion> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, ProcessGroup* group) {
    ctx->saved_objects["group"] = group;
    return detail::tp_all_gather_last(x, *group);
  }
  static autograd::tensor_list backward(autograd::AutogradContext* ctx, autograd::tensor_list grads) {
    ProcessGroup* g = detail::saved_group(ctx);
    return {detail::last_dim_block(grads[0], g->size(), g->rank()), Tensor()};
  }
};

/// Keeps this rank's block of the last dim in forward ((..., P n) -> (..., n)); backward
/// all-gathers the gradient.
struct ScatterToTensorParallelRegion : autograd::Function<ScatterToTensorParallelRegion> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, ProcessGroup* group) {
    ctx->saved_objects["group"] = group;
    return detail::last_dim_block(x, group->size(), group->rank());
  }
  static autograd::tensor_list backward(autograd::AutogradContext* ctx, autograd::tensor_list grads) {
    return {detail::tp_all_gather_last(grads[0], *detail::saved_group(ctx)), Tensor()};
  }
};

/// f (see the file comment). x: any shape.
inline Tensor copy_to_tensor_parallel_region(const Tensor& x, ProcessGroup& group) {
  return CopyToTensorParallelRegion::apply(x, &group);
}
/// g (see the file comment). x: any shape.
inline Tensor reduce_from_tensor_parallel_region(const Tensor& x, ProcessGroup& group) {
  return ReduceFromTensorParallelRegion::apply(x, &group);
}
/// (..., n) -> (..., P n) (see the file comment).
inline Tensor gather_from_tensor_parallel_region(const Tensor& x, ProcessGroup& group) {
  return GatherFromTensorParallelRegion::apply(x, &group);
}
/// (..., P n) -> (..., n), this rank's block (see the file comment). Throws if P does not divide
/// the last dim.
inline Tensor scatter_to_tensor_parallel_region(const Tensor& x, ProcessGroup& group) {
  detail::check(x.dim() >= 1 && x.size(-1) % group.size() == 0, detail::rank_prefix(),
                "scatter_to_tensor_parallel_region: the last dim of ", shape_str(x.sizes()),
                " is not divisible by the group size ", group.size());
  return ScatterToTensorParallelRegion::apply(x, &group);
}

/// Rows (output features) of a Linear split over `group` (see the file comment).
/// Parameters "weight" (out/P, in) and "bias" (out/P) (if the Linear has one).
class ColumnParallelLinear : public nn::Module {
 public:
  int64_t in_features, out_features;  ///< of the whole layer
  int64_t sections;                   ///< equal parts of the output, each split over the ranks
  bool gather_output;                 ///< all-gather y, so that every rank has (..., out)
  std::shared_ptr<ProcessGroup> group;  ///< kept alive by the layer
  Tensor weight, bias;

  /// This rank's shard of `full` (the same layer on every rank). Throws tinytorch::Error when
  /// sections < 1, P * sections does not divide out_features, or gather_output is asked with
  /// sections > 1 (the gathered blocks would come rank by rank, not section by section).
  ColumnParallelLinear(const nn::Linear& full, ProcessGroup& tp_group, bool gather_output = false,
                       int64_t sections = 1)
      : in_features(full.in_features), out_features(full.out_features), sections(sections),
        gather_output(gather_output), group(tp_group.shared_from_this()) {
    const int64_t P = tp_group.size(), r = tp_group.rank();
    detail::check(sections >= 1, detail::rank_prefix(), "ColumnParallelLinear: sections must be >= 1, got ", sections);
    detail::check(sections == 1 || !gather_output, detail::rank_prefix(), "ColumnParallelLinear: gather_output with ",
                  sections, " sections would put the output's columns in rank order, not the layer's; gather "
                  "each section yourself");
    detail::check(out_features % (sections * P) == 0, detail::rank_prefix(),
                  "ColumnParallelLinear: out_features ", out_features, " (in ", sections,
                  " sections) is not divisible by the tensor-parallel size ", P);
    const int64_t section = out_features / sections, block = section / P;
    NoGradGuard no_grad;
    std::vector<Tensor> w, b;
    for (int64_t s = 0; s < sections; ++s) {
      w.push_back(full.weight.narrow(0, s * section + r * block, block));
      if (full.bias.defined()) b.push_back(full.bias.narrow(0, s * section + r * block, block));
    }
    weight = register_parameter("weight", cat(w, 0).contiguous().clone());
    if (full.bias.defined()) bias = register_parameter("bias", cat(b, 0).contiguous().clone());
  }

  /// x (..., in) -> (..., out/P), or (..., out) with gather_output.
  Tensor forward(const Tensor& x) override {
    detail::check(x.dim() >= 1 && x.size(-1) == in_features, detail::rank_prefix(),
                  "ColumnParallelLinear: input of shape ", shape_str(x.sizes()), " does not end in in_features=",
                  in_features);
    const Tensor y = linear(copy_to_tensor_parallel_region(x, *group), weight, bias);
    return gather_output ? gather_from_tensor_parallel_region(y, *group) : y;
  }
  std::string name() const override { return "ColumnParallelLinear"; }
  std::string extra_repr() const override {
    return ::tinytorch::detail::str_cat("in_features=", in_features, ", out_features=", out_features,
                                        ", tp_size=", group->size(), ", bias=", bias.defined() ? "True" : "False");
  }
};

/// Columns (input features) of a Linear split over `group`; the partial products are summed
/// with g (see the file comment). Parameters "weight" (out, in/P) and "bias" (out, whole).
class RowParallelLinear : public nn::Module {
 public:
  int64_t in_features, out_features;  ///< of the whole layer
  bool input_is_parallel;             ///< x arrives as this rank's slice (..., in/P)
  std::shared_ptr<ProcessGroup> group;  ///< kept alive by the layer
  Tensor weight, bias;

  /// This rank's shard of `full`. Throws tinytorch::Error when P does not divide in_features.
  RowParallelLinear(const nn::Linear& full, ProcessGroup& tp_group, bool input_is_parallel = true)
      : in_features(full.in_features), out_features(full.out_features), input_is_parallel(input_is_parallel),
        group(tp_group.shared_from_this()) {
    const int64_t P = tp_group.size();
    detail::check(in_features % P == 0, detail::rank_prefix(), "RowParallelLinear: in_features ", in_features,
                  " is not divisible by the tensor-parallel size ", P);
    NoGradGuard no_grad;
    weight = register_parameter("weight", detail::last_dim_block(full.weight, P, tp_group.rank()).clone());
    if (full.bias.defined()) bias = register_parameter("bias", full.bias.clone());
  }

  /// x (..., in/P) (or (..., in) when !input_is_parallel) -> (..., out), the same on every rank.
  Tensor forward(const Tensor& x) override {
    const int64_t local = in_features / group->size();
    const int64_t expected = input_is_parallel ? local : in_features;
    detail::check(x.dim() >= 1 && x.size(-1) == expected, detail::rank_prefix(), "RowParallelLinear: input of shape ",
                  shape_str(x.sizes()), " does not end in ", expected,
                  input_is_parallel ? " (in_features / tp_size)" : " (in_features)");
    const Tensor xr = input_is_parallel ? x : scatter_to_tensor_parallel_region(x, *group);
    const Tensor y = reduce_from_tensor_parallel_region(linear(xr, weight), *group);
    return bias.defined() ? y + bias : y;  // the bias once, after the sum
  }
  std::string name() const override { return "RowParallelLinear"; }
  std::string extra_repr() const override {
    return ::tinytorch::detail::str_cat("in_features=", in_features, ", out_features=", out_features,
                                        ", tp_size=", group->size(), ", bias=", bias.defined() ? "True" : "False");
  }
};

/// The parameters of `model` that hold a different part on each rank of the group: the weights
/// of every ColumnParallelLinear and RowParallelLinear inside it, and the Column biases (a Row's
/// bias is whole on every rank). Everything else is replicated.
inline std::vector<Tensor> sharded_parameters(const nn::Module& model) {
  std::vector<Tensor> out;
  if (auto* c = dynamic_cast<const ColumnParallelLinear*>(&model)) {
    out.push_back(c->weight);
    if (c->bias.defined()) out.push_back(c->bias);
  } else if (auto* r = dynamic_cast<const RowParallelLinear*>(&model)) {
    out.push_back(r->weight);
  }
  for (const auto& child : model.named_children()) {
    std::vector<Tensor> more = sharded_parameters(*child.second);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

/// torch.nn.utils.clip_grad_norm_ (2-norm) for a model split over `group`: the norm is the whole
/// model's, the shards' squares added over the ranks and the replicated parameters counted once
/// (by group rank 0), so every rank scales by the same coefficient and the replicated
/// parameters stay equal (clip_grad.hpp). Returns the norm before clipping. A collective.
inline double clip_grad_norm_tensor_parallel_(const nn::Module& model, double max_norm, ProcessGroup& group) {
  const std::vector<Tensor> shards = sharded_parameters(model), all = model.parameters();
  std::vector<Tensor> counted;
  for (const Tensor& p : all) {
    const bool is_shard =
        std::any_of(shards.begin(), shards.end(), [&](const Tensor& s) { return s.impl() == p.impl(); });
    if (is_shard || group.rank() == 0) counted.push_back(p);
  }
  return clip_grad_norm_across_(counted, all, max_norm, group);
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed
