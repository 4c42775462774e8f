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
// Checkpoints: state_dict() / load_state_dict() give the state and the groups' hyper-parameters as
// a flat list of (key, Tensor) that tinytorch::save writes, keyed by parameter index as PyTorch's
// optimizer.state_dict() (the key mapping is documented at state_dict() below).
// Chapter: chapters/01-training-loop.md (the loop), chapters/03-optimizers.md (the updates, state
// memory, state_dict and resuming).
// Reference: torch.optim.Optimizer (PyTorch 2.x: torch/optim/optimizer.py).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tinytorch/functional.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace optim {

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
  virtual void step_impl();

 public:

  /// Resets the gradients of all parameters: to undefined (set_to_none=true, the PyTorch 2.x
  /// default: saves memory, and the next backward writes instead of adding) or to zeros.
  void zero_grad(bool set_to_none = true);

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

  /// The optimizer's checkpoint (torch.optim.Optimizer.state_dict) as a flat list of
  /// (key, Tensor), what tinytorch::save writes. PyTorch's nested dict maps to keys as:
  ///   sd['state'][i]['momentum_buffer']          "state.<i>.momentum_buffer"   (p's shape, dtype)
  ///   sd['state'][i]['step']                     "state.<i>.step"              0-d float32, as PyTorch's
  ///   sd['state'][i]['exp_avg' | 'exp_avg_sq' | 'max_exp_avg_sq']   "state.<i>.exp_avg", ...
  ///   sd['param_groups'][g]['lr'] (a float)      "param_groups.<g>.lr"         0-d float64
  ///   sd['param_groups'][g]['betas'] (a tuple)   "param_groups.<g>.betas"      (2,) float64
  ///   sd['param_groups'][g]['nesterov'] (bool)   "param_groups.<g>.nesterov"   0-d float64, 0 or 1
  ///   sd['param_groups'][g]['initial_lr']        "param_groups.<g>.initial_lr" (only once a scheduler set it)
  ///   sd['param_groups'][g]['params'] ([0, 1])   "param_groups.<g>.params"     (n,) int64
  /// i counts the parameters over all groups in order (group 0's first), as PyTorch's ids; only
  /// parameters that have state (were updated at least once) appear under "state.", in that
  /// order, then each group's hyper-parameters (hyperparameter_names(): SGD's lr, momentum,
  /// dampening, weight_decay, nesterov; Adam's lr, betas, eps, weight_decay, amsgrad), then
  /// "params". PyTorch's flags that tinytorch does not have (maximize, foreach, fused, ...) are
  /// not written; SGD without momentum has no state entries (PyTorch stores momentum_buffer=None).
  /// The state tensors are the live ones, not copies (as PyTorch's): clone them, or save them,
  /// to keep a snapshot while training goes on.
  /// Virtual: distributed::ZeroRedundancyOptimizer gives the consolidated state of every rank.
  virtual std::vector<std::pair<std::string, Tensor>> state_dict() const;

  /// Restores a state_dict() (torch.optim.Optimizer.load_state_dict): every group's
  /// hyper-parameters (lr included, and initial_lr) are replaced by the loaded ones, the
  /// parameters stay this optimizer's, matched to the saved ids by position (group by group, as
  /// PyTorch's zip of the saved and current "params" lists); the state tensors are copied, cast to
  /// their parameter's dtype (step: an integer count), and replace all current state.
  /// Everything is checked before anything changes; throws tinytorch::Error:
  ///   "loaded state dict has a different number of parameter groups"  (PyTorch's ValueError)
  ///   "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
  ///   "Optimizer.load_state_dict: size mismatch for state.0.exp_avg: copying a state with shape
  ///    [3], the shape of parameter 0 is [2, 3]"  (PyTorch does not check, and fails later)
  ///   "... missing key \"param_groups.0.momentum\"", "... unexpected key \"...\"" (a key of
  ///   another optimizer, or none of ours, or an id not written as state_dict() writes it, e.g.
  ///   "state.00.step"), a state for an id no group lists, a parameter's state without an entry
  ///   its optimizer needs (required_state_names(): Adam's step, exp_avg, exp_avg_sq; PyTorch's
  ///   step raises KeyError), a step that is not a non-negative integer, a hyper-parameter that
  ///   is not a number (betas: two numbers). Hyper-parameter values are not range-checked (NaN or
  ///   a negative lr loads, as in PyTorch).
  /// Virtual: distributed::ZeroRedundancyOptimizer keeps the state of its own shard only.
  virtual void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd);

  /// The names of the per-group hyper-parameters state_dict() writes (PyTorch's group keys).
  /// The base class lists every field of ParamGroup; SGD and Adam list their own.
  virtual std::vector<std::string> hyperparameter_names() const {
    return {"lr", "momentum", "dampening", "weight_decay", "nesterov", "betas", "eps", "amsgrad"};
  }
  /// The names of the per-parameter state entries state_dict() writes (when defined).
  virtual std::vector<std::string> state_names() const {
    return {"momentum_buffer", "step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
  /// The state entries a parameter that has any state must have, in `group` (load_state_dict
  /// checks them): none here and for SGD (its momentum_buffer may be absent), Adam's step,
  /// exp_avg, exp_avg_sq, and max_exp_avg_sq when the group has amsgrad.
  virtual std::vector<std::string> required_state_names(const ParamGroup& group) const {
    (void)group;
    return {};
  }

  /// Bytes held by the optimizer's per-parameter state tensors (momentum buffers, moments; the
  /// step counters are not tensors here and not counted): 0 for plain SGD, the parameters' bytes
  /// for SGD with momentum, twice that for Adam/AdamW (three times with amsgrad).
  int64_t state_nbytes() const;

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
  void add_group(ParamGroup group);

  /// Throws "optimizer got an empty parameter list" (what PyTorch's constructor checks).
  static void check_not_empty(const std::vector<Tensor>& params) {
    TT_CHECK(!params.empty(), "optimizer got an empty parameter list");
  }

  /// True when the update can run as a raw loop: a CPU float32/float64 parameter and a grad of
  /// the same dtype, both dense and row-major (the usual case: nn:: parameters and the grads
  /// autograd accumulates). Otherwise optimizers fall back to their *_naive tensor-op version,
  /// which float16/bfloat16 parameters always take: each tensor op rounds once, as PyTorch's
  /// single-tensor (foreach=False) loop does.
  static bool fast_path_ok(const Tensor& param, const Tensor& grad);

 private:
  static std::string join(const std::vector<std::string>& names);
  /// A one-element tensor's value as a double (any dtype), or an error naming the key.
  static double scalar_value(const Tensor& t, const std::string& key);
  static Tensor& state_tensor(ParamState& st, const std::string& name);
  /// The state entry `name` as a tensor ("step": a 0-d float32 count, as PyTorch's).
  static Tensor state_tensor(const ParamState& st, const std::string& name) {
    if (name == "step") return scalar_tensor(static_cast<double>(st.step), kFloat32);
    return state_tensor(const_cast<ParamState&>(st), name);
  }
  static Tensor group_value(const ParamGroup& g, const std::string& name);
  static void set_group_value(ParamGroup& g, const std::string& name, const Tensor& t, const std::string& key);

 protected:
  std::vector<ParamGroup> param_groups_;
  std::unordered_map<TensorImpl*, ParamState> state_;
  int64_t step_count_ = 0;
};

}  TT_NAMESPACE_END  // namespace tinytorch::optim

#if TT_HEADER_ONLY
#include "tinytorch/optim/optimizer.ipp"
#endif
