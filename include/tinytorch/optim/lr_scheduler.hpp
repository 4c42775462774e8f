// tinytorch/optim/lr_scheduler.hpp — learning-rate schedules: LRScheduler, LinearLR (warmup),
// CosineAnnealingLR, StepLR, SequentialLR (warmup then decay).
// A scheduler rewrites optimizer.param_groups()[i].lr each time its step() is called; how often
// that is (every iteration or every epoch) is the caller's choice, the schedule counts calls:
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); sched.step(); }
// The value in effect for the k-th optimizer step (k = 0, 1, ...) is the one set by the k-th
// scheduler call, the constructor counting as call 0 (last_epoch = 0).
// Each schedule, with base_lr = the group's lr when the first scheduler was made (initial_lr):
//   LinearLR:          lr_k = base_lr * (s + (e - s) * min(k, T) / T)        s, e = start/end factor
//   CosineAnnealingLR: lr_k = eta_min + (base_lr - eta_min) * (1 + cos(pi * k / T_max)) / 2
//                      (and on past T_max: up again to base_lr at 2 T_max, down at 3 T_max, ...)
//   StepLR:            lr_k = base_lr * gamma^floor(k / step_size)
//   SequentialLR:      scheduler i runs between milestones[i-1] and milestones[i], restarted at
//                      its epoch 0 there: LinearLR warmup to base_lr, then CosineAnnealingLR.
// step() computes PyTorch's *chainable* get_lr (the cosine: lr_k = eta_min + (lr_{k-1} - eta_min)
// (1 + cos(pi k / T_max)) / (1 + cos(pi (k-1) / T_max))), equal to the closed form while nothing
// else touches lr, and scaling from the current lr when something did; the closed forms where
// PyTorch uses them (SequentialLR's milestones, resuming). PyTorch 2.x's code, 1.13's numbers.
// A first step() before any optimizer.step() prints PyTorch's UserWarning ("Detected call of
// `lr_scheduler.step()` before `optimizer.step()`...") once per process (detail::order_warnings()).
// Checkpoints: state_dict() / load_state_dict() save and restore last_epoch, the step count,
// base_lrs, the last lrs and the schedule's own settings (SequentialLR: its schedulers' too), as
// PyTorch's (which saves every attribute but the optimizer); with the optimizer's state_dict
// (which holds each group's current lr) a resumed schedule continues with the same bits.
// Chapter: chapters/03-optimizers.md; chapters/08-large-batch.md (warmup). Reference:
// torch.optim.lr_scheduler; Loshchilov & Hutter, "SGDR" (2017); Goyal et al. (2017, warmup).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "tinytorch/optim/optimizer.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace optim::lr_scheduler {

class SequentialLR;

/// math.pi (the same double as M_PI, which standard C++17 does not define).
constexpr double kPi = 3.141592653589793;

namespace detail {
/// PyTorch's warning text (torch/optim/lr_scheduler.py).
inline const char* order_warning_text() {
  return "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should "
         "call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
         "result in PyTorch skipping the first value of the learning rate schedule. See more details at "
         "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate";
}
/// How many times a scheduler was stepped before its optimizer (the warning prints on the first).
inline std::atomic<int64_t>& order_warnings() {
  static std::atomic<int64_t> count{0};
  return count;
}
/// Reads a scheduler state dict: each key is taken at most once, every read is checked, and
/// the keys nobody took are reported (LRScheduler::load_state_dict).
class StateReader {
 public:
  explicit StateReader(const std::vector<std::pair<std::string, Tensor>>& sd);
  const Tensor& get(const std::string& key);
  double real(const std::string& key);
  int64_t integer(const std::string& key);
  std::vector<double> reals(const std::string& key, size_t n);
  void check_all_used() const;

 private:
  std::map<std::string, Tensor> by_key_;
  std::set<std::string> used_;
};
inline Tensor int_scalar(int64_t v) { return scalar_tensor(static_cast<double>(v), kInt64); }
inline Tensor real_scalar(double v) { return scalar_tensor(v, kFloat64); }
inline Tensor reals_tensor(const std::vector<double>& v) {
  return tensor(v, {static_cast<int64_t>(v.size())}, kFloat64);
}
}  // namespace detail

/// Base class: keeps last_epoch and base_lrs, writes the lrs that get_lr() computes.
/// A subclass implements get_lr() (and closed_form_lr() when it has one) and calls
/// initial_step() at the end of its constructor (C++ cannot call the subclass's get_lr from the
/// base constructor, where PyTorch's __init__ does it).
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances the schedule by one (last_epoch += 1) and writes the new lr into every param group.
  /// Warns (once per process, on stderr) when this is the first call and the optimizer has not
  /// stepped yet, as PyTorch does: the first lr of the schedule is then never used.
  virtual void step();
  /// The lr of each param group as of the last step() (or construction).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  Optimizer& optimizer() const { return *optimizer_; }
  /// PyTorch's class name ("CosineAnnealingLR"), for messages.
  virtual std::string name() const = 0;

  /// The schedule's checkpoint (torch.optim.lr_scheduler.LRScheduler.state_dict: every attribute
  /// but the optimizer) as flat (key, Tensor) pairs for tinytorch::save:
  ///   "last_epoch", "_step_count" (0-d int64), "base_lrs", "_last_lr" ((groups,) float64),
  ///   then the schedule's settings: CosineAnnealingLR "T_max" (int64), "eta_min"; LinearLR
  ///   "start_factor", "end_factor", "total_iters"; StepLR "step_size", "gamma"; SequentialLR
  ///   only "last_epoch", "_last_lr", "_milestones" ((n,) int64) and each scheduler's keys under
  ///   "_schedulers.<i>." (PyTorch: sd['_schedulers'][i]). tests/test_optim.cpp compares the keys
  ///   with PyTorch's (gen_optim.py), leaving out the flags tinytorch has not (verbose, ...). The lr itself lives in the optimizer's state_dict (param_groups).
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  /// Restores a state_dict() (PyTorch: self.__dict__.update(state_dict)): the settings too, so a
  /// scheduler built with other arguments takes the saved ones. Checks everything before it
  /// changes anything; throws tinytorch::Error naming a missing, unexpected or malformed key
  /// (base_lrs and _last_lr must have one value per param group; PyTorch does not check).
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd);

  int64_t last_epoch;          ///< number of step() calls since construction (0 after the constructor)
  std::vector<double> base_lrs;  ///< each group's initial_lr

 protected:
  /// With last_epoch == -1 (a fresh schedule) records each group's lr as its initial_lr unless a
  /// scheduler already did; otherwise (resuming) every group must have initial_lr. Throws
  /// "param 'initial_lr' is not specified in param_groups[i] when resuming an optimizer".
  explicit LRScheduler(Optimizer& optimizer, int64_t last_epoch = -1);

  /// Appends this scheduler's entries under `prefix`; a subclass adds its settings after these.
  virtual void append_state(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const;
  /// Reads this scheduler's entries under `prefix` (every read checked); assigns them if `commit`.
  virtual void read_state(detail::StateReader& in, const std::string& prefix, bool commit);

  /// The chainable form: each group's next lr, usually from its current lr. Called with
  /// last_epoch already advanced.
  virtual std::vector<double> get_lr() = 0;
  /// The closed form lr(last_epoch) from base_lrs, if the schedule has one.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }

  /// The constructor's first step (PyTorch's _initial_step): last_epoch -1 -> 0.
  void initial_step();
  /// Without epoch: last_epoch += 1 and the chainable form. With epoch: last_epoch = epoch and
  /// the closed form (PyTorch's _update_lr). Writes the lrs and records them in get_last_lr().
  void update_lr(std::optional<int64_t> epoch);
  /// PyTorch's check at the top of step(): the first call after the constructor's, with no
  /// optimizer.step() yet.
  void warn_if_before_optimizer_step() const;
  /// Each group's current lr.
  std::vector<double> group_lrs() const;

  Optimizer* optimizer_;
  int64_t step_count_ = 0;  ///< step() calls, the constructor's included
  bool is_initial_ = false;  ///< true during the constructor's step
  std::vector<double> last_lr_;

  friend class SequentialLR;
};

/// Multiplies the lr by a factor going linearly from start_factor (at epoch 0) to end_factor (at
/// epoch total_iters and after): the usual warmup (torch.optim.lr_scheduler.LinearLR).
///   lr_k = base_lr * (start_factor + (end_factor - start_factor) * min(k, total_iters) / total_iters)
/// Throws "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
/// unless 0 < start_factor <= 1, "Ending multiplicative factor expected to be between 0 and 1."
/// unless 0 <= end_factor <= 1.
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
                    int64_t total_iters = 5, int64_t last_epoch = -1);
  std::string name() const override { return "LinearLR"; }

  double start_factor, end_factor;
  int64_t total_iters;

 protected:
  void append_state(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const override;
  void read_state(detail::StateReader& in, const std::string& prefix, bool commit) override;
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
};

/// Cosine annealing from base_lr down to eta_min over T_max steps, then back up over the next
/// T_max, and so on (torch.optim.lr_scheduler.CosineAnnealingLR: SGDR's curve without restarts).
///   lr_k = eta_min + (base_lr - eta_min) * (1 + cos(pi * k / T_max)) / 2
/// Computed with PyTorch's recursive form (see the top of this file). Throws
/// "CosineAnnealingLR: T_max must be positive, got 0" (PyTorch fails later, dividing by zero).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0, int64_t last_epoch = -1);
  std::string name() const override { return "CosineAnnealingLR"; }

  int64_t T_max;
  double eta_min;

 protected:
  void append_state(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const override;
  void read_state(detail::StateReader& in, const std::string& prefix, bool commit) override;
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
};

/// Multiplies the lr by gamma every step_size steps (torch.optim.lr_scheduler.StepLR).
///   lr_k = base_lr * gamma^floor(k / step_size)
/// Throws "StepLR: step_size must be positive, got 0" (PyTorch fails later, dividing by zero).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);
  std::string name() const override { return "StepLR"; }

  int64_t step_size;
  double gamma;

 protected:
  void append_state(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const override;
  void read_state(detail::StateReader& in, const std::string& prefix, bool commit) override;
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
};

/// Runs schedulers one after another (torch.optim.lr_scheduler.SequentialLR): schedulers[i] is in
/// charge from milestones[i-1] (inclusive) to milestones[i]. At a milestone the next scheduler
/// restarts at its epoch 0 with its closed form (for CosineAnnealingLR: base_lr), then steps
/// normally. Construction resets every group's lr to initial_lr, undoes the constructor step of
/// every scheduler and redoes only the first one's.
///   auto warmup = std::make_shared<LinearLR>(opt, 0.1, 1.0, 5);
///   auto cosine = std::make_shared<CosineAnnealingLR>(opt, 95);
///   SequentialLR sched(opt, {warmup, cosine}, {5});
/// Errors (tinytorch::Error):
///   "SequentialLR expects at least one scheduler, but got no scheduler."
///   "SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler
///    CosineAnnealingLR at index 1 that belongs to a different optimizer." (PyTorch prints the
///    optimizer's repr instead)
///   "Sequential Schedulers expects number of schedulers provided to be one more than the number
///    of milestone points, but got number of schedulers 2 and the number of milestones to be equal to 0"
///   "SequentialLR: scheduler at index 0 is null"
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  std::string name() const override { return "SequentialLR"; }

  /// Steps the scheduler in charge of the new epoch; at a milestone, restarts it at epoch 0.
  void step() override;
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }
  const std::vector<int64_t>& milestones() const { return milestones_; }

 protected:
  // PyTorch's SequentialLR keeps last_epoch, _last_lr and _milestones of its own (no base_lrs or
  // _step_count: its __init__ does not call LRScheduler's), and each scheduler's state dict.
  void append_state(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const override;
  void read_state(detail::StateReader& in, const std::string& prefix, bool commit) override;

  /// Never called: step() is overridden. Returns the current lrs.
  std::vector<double> get_lr() override { return group_lrs(); }

 private:
  static void recursive_undo(LRScheduler& s);

  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::optim::lr_scheduler

#if TT_HEADER_ONLY
#include "tinytorch/optim/lr_scheduler.ipp"
#endif
