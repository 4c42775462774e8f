// tinytorch/optim/optimizer.hpp — Optimizer: parameter groups, per-parameter state, zero_grad.
//
// An optimizer owns handles to the parameters it updates (the same TensorImpls as the model's),
// grouped into param groups that each carry their own hyper-parameters, as PyTorch's
// `optimizer.param_groups` (a list of dicts) does:
//   step():  with no_grad: for group in param_groups: for p in group.params:
//                if p.grad is None: continue            // e.g. a frozen or unused layer
//                update(p, p.grad, state[p], group)     // SGD, Adam, ... (one subclass each)
//   zero_grad(set_to_none=True): p.grad = None          // PyTorch 2.x default
//                (set_to_none=False): p.grad.zero_()    // keeps the buffers allocated
// state[p] is per-parameter memory (SGD's momentum buffer, Adam's moments and step count), keyed
// by the parameter's TensorImpl*, created on the parameter's first update.
// Learning-rate schedulers (lr_scheduler.hpp) write `param_groups()[i].lr` between steps.
// Bookkeeping as PyTorch's: step() counts its calls (step_count(), which schedulers check to warn
// when they are stepped first) and every parameter update bumps the parameter's version counter
// (core/storage.hpp), so a backward through a graph built before the step raises instead of
// differentiating with the new values.
// Shapes: every state tensor has its parameter's shape and dtype.
// Chapter: chapters/01-training-loop.md (the loop), chapters/03-optimizers.md (planned: the updates).
// Reference: torch.optim.Optimizer (PyTorch 2.x: torch/optim/optimizer.py).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../functional.hpp"

namespace tinytorch::optim {

namespace detail {
/// A double as Python's repr(float) prints it ("0.1", "-1.0", "1e-05", "inf"), so that error
/// messages read exactly as PyTorch's f"Invalid learning rate: {lr}". (A Python int argument
/// prints without ".0" there; tinytorch's arguments are always doubles.)
inline std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest %e form that reads back as the same double (what repr does).
  char buf[40];
  for (int prec = 0; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s(buf);
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const size_t e = s.find('e');
  const int exp10 = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp10 < -4 || exp10 >= 16) {  // scientific, as repr(1e-05) == '1e-05'
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += ebuf;
  } else if (exp10 < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  } else {
    const size_t int_digits = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= int_digits) out = digits + std::string(int_digits - digits.size(), '0') + ".0";
    else out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
  }
  return neg ? "-" + out : out;
}
}  // namespace detail

/// One parameter group: parameters plus the hyper-parameters used for them (PyTorch's group
/// dict, with every optimizer's keys as fields; an optimizer reads its own and ignores the rest).
/// Change them between steps, e.g. `opt.param_groups()[0].lr = 0.01;` (what schedulers do).
struct ParamGroup {
  std::vector<Tensor> params;
  double lr = 1e-3;                   ///< learning rate (every optimizer)
  std::optional<double> initial_lr;   ///< set by the first LR scheduler (PyTorch's 'initial_lr')
  double weight_decay = 0.0;          ///< L2 penalty (SGD, Adam) or decoupled decay (AdamW)
  // SGD
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  // Adam / AdamW
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  bool amsgrad = false;
};

/// Per-parameter optimizer memory (PyTorch's optimizer.state[p]); each optimizer uses its fields.
struct ParamState {
  Tensor momentum_buffer;  ///< SGD with momentum: the velocity b_t (undefined before the first step)
  int64_t step = 0;        ///< Adam/AdamW: number of updates applied to this parameter
  Tensor exp_avg;          ///< Adam/AdamW: first moment m_t
  Tensor exp_avg_sq;       ///< Adam/AdamW: second moment v_t
  Tensor max_exp_avg_sq;   ///< Adam/AdamW with amsgrad: max over t of v_t
};

/// Base class of SGD, Adam, AdamW. Not copyable (schedulers refer to it, state is keyed by the
/// parameters' TensorImpl*).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One optimization step: for every parameter whose grad is defined, update(p, p.grad, state, group),
  /// under NoGradGuard. Parameters with an undefined grad (unused, frozen) are skipped and get no state.
  /// Each updated parameter's version counter is bumped (as by PyTorch's in-place updates), so a
  /// backward through a graph built before the step raises instead of using the new values.
  /// Counts the call (step_count()), which LR schedulers check.
  void step() {
    ++step_count_;
    step_impl();
  }

  /// Number of step() calls so far (PyTorch 1.13's optimizer._step_count, which
  /// lr_scheduler.step() reads to warn when it is called before the first optimizer.step()).
  int64_t step_count() const { return step_count_; }

 protected:
  /// The step itself (the loop above). A subclass with another loop overrides this, not step().
  virtual void step_impl() {
    NoGradGuard no_grad;
    for (ParamGroup& group : param_groups_) {
      for (Tensor& p : group.params) {
        const Tensor grad = p.grad();
        if (!grad.defined()) continue;
        update(p, grad, state_[p.impl()], group);
      }
    }
  }

 public:

  /// Resets the gradients of all parameters: to undefined (set_to_none=true, the PyTorch 2.x
  /// default: saves memory, and the next backward writes instead of adding) or to zeros.
  void zero_grad(bool set_to_none = true) {
    for (ParamGroup& group : param_groups_) {
      for (Tensor& p : group.params) {
        Tensor grad = p.grad();
        if (!grad.defined()) continue;
        if (set_to_none) {
          p.set_grad(Tensor());
        } else {
          NoGradGuard no_grad;
          if (grad.grad_fn()) grad.detach_();  // as PyTorch's zero_grad (detach_ refuses views)
          else grad.impl()->requires_grad = false;
          grad.zero_();
        }
      }
    }
  }

  /// The parameter groups (mutable: set group.lr between steps to change the learning rate).
  std::vector<ParamGroup>& param_groups() { return param_groups_; }
  const std::vector<ParamGroup>& param_groups() const { return param_groups_; }

  /// All per-parameter state, keyed by TensorImpl* (PyTorch's optimizer.state).
  const std::unordered_map<TensorImpl*, ParamState>& state() const { return state_; }
  /// The state of parameter p, or nullptr before p's first update.
  const ParamState* state(const Tensor& p) const {
    auto it = state_.find(p.impl());
    return it == state_.end() ? nullptr : &it->second;
  }

 protected:
  Optimizer() = default;

  /// The update rule for one parameter (grad defined, grad mode off). `state` starts empty.
  virtual void update(Tensor& param, const Tensor& grad, ParamState& state, const ParamGroup& group) = 0;

  /// Appends a group after checking its parameters (PyTorch's add_param_group): defined, leaves,
  /// not already in this optimizer. Throws tinytorch::Error:
  ///   "can't optimize a non-leaf Tensor"
  ///   "some parameters appear in more than one parameter group"
  ///   "optimizer contains a parameter group with duplicate parameters" (PyTorch only warns;
  ///     tinytorch throws, since such a parameter would be updated twice per step)
  void add_group(ParamGroup group) {
    std::unordered_set<TensorImpl*> in_group;
    for (size_t i = 0; i < group.params.size(); ++i) {
      const Tensor& p = group.params[i];
      TT_CHECK(p.defined(), "optimizer got an undefined tensor at index ", i, " of a parameter group");
      TT_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor");
      TT_CHECK(in_group.insert(p.impl()).second,
               "optimizer contains a parameter group with duplicate parameters");
    }
    for (const ParamGroup& g : param_groups_)
      for (const Tensor& q : g.params)
        TT_CHECK(in_group.count(q.impl()) == 0, "some parameters appear in more than one parameter group");
    param_groups_.push_back(std::move(group));
  }

  /// Throws "optimizer got an empty parameter list" (what PyTorch's constructor checks).
  static void check_not_empty(const std::vector<Tensor>& params) {
    TT_CHECK(!params.empty(), "optimizer got an empty parameter list");
  }

  /// True when the update can run as a raw loop: a CPU float32/float64 parameter and a grad of
  /// the same dtype, both dense and row-major (the usual case: nn:: parameters and the grads
  /// autograd accumulates). Otherwise optimizers fall back to their *_naive tensor-op version.
  static bool fast_path_ok(const Tensor& param, const Tensor& grad) {
    return param.device().is_cpu() && grad.device().is_cpu() && param.dtype() == grad.dtype() &&
           param.dtype() != kInt64 && param.is_contiguous() && grad.is_contiguous() &&
           param.sizes() == grad.sizes();
  }

  std::vector<ParamGroup> param_groups_;
  std::unordered_map<TensorImpl*, ParamState> state_;
  int64_t step_count_ = 0;
};

}  // namespace tinytorch::optim
