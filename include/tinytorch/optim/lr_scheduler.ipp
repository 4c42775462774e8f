// tinytorch/optim/lr_scheduler.ipp — the bodies of lr_scheduler.hpp: stepping, the closed forms,
// state_dict / load_state_dict of every scheduler.
//
// Not a header to include: lr_scheduler.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The declarations and their documentation are in lr_scheduler.hpp.
// Chapter: chapters/03-optimizers.md.
#pragma once

#include "tinytorch/optim/lr_scheduler.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace optim::lr_scheduler {

TT_DECL detail::StateReader::StateReader(const std::vector<std::pair<std::string, Tensor>>& sd) {
  for (const auto& [key, t] : sd) {
    TT_CHECK(t.defined(), "LRScheduler.load_state_dict: undefined tensor for key \"", key, "\"");
    TT_CHECK(by_key_.emplace(key, t).second, "LRScheduler.load_state_dict: duplicate key \"", key, "\"");
  }
}

TT_DECL const Tensor& detail::StateReader::get(const std::string& key) {
  auto it = by_key_.find(key);
  TT_CHECK(it != by_key_.end(), "LRScheduler.load_state_dict: missing key \"", key, "\"");
  used_.insert(key);
  return it->second;
}

TT_DECL double detail::StateReader::real(const std::string& key) {
  const Tensor& t = get(key);
  TT_CHECK(t.numel() == 1, "LRScheduler.load_state_dict: ", key, " must hold one number, got shape ",
           shape_str(t.sizes()));
  return t.item<double>();
}

TT_DECL int64_t detail::StateReader::integer(const std::string& key) {
  const double v = real(key);
  TT_CHECK(v == std::floor(v) && std::abs(v) < 9e18, "LRScheduler.load_state_dict: ", key,
           " must be an integer, got ", optim::detail::py_float(v));
  return static_cast<int64_t>(v);
}

TT_DECL std::vector<double> detail::StateReader::reals(const std::string& key, size_t n) {
  const Tensor& t = get(key);
  TT_CHECK(t.dim() == 1 && t.numel() == static_cast<int64_t>(n), "LRScheduler.load_state_dict: ", key,
           " must hold ", n, " value(s) (one per param group), got shape ", shape_str(t.sizes()));
  const Tensor d = t.to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + n);
}

TT_DECL void detail::StateReader::check_all_used() const {
  for (const auto& entry : by_key_)
    TT_CHECK(used_.count(entry.first), "LRScheduler.load_state_dict: unexpected key \"", entry.first, "\"");
}

TT_DECL void LRScheduler::step() {
  warn_if_before_optimizer_step();
  ++step_count_;
  update_lr(std::nullopt);
}

TT_DECL std::vector<std::pair<std::string, Tensor>> LRScheduler::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> out;
  append_state(out, "");
  return out;
}

TT_DECL void LRScheduler::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) {
  {
    detail::StateReader dry_run(sd);
    read_state(dry_run, "", false);
    dry_run.check_all_used();
  }
  detail::StateReader reader(sd);
  read_state(reader, "", true);
}

TT_DECL LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch)
    : last_epoch(last_epoch), optimizer_(&optimizer) {
  auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (last_epoch == -1) {
      if (!groups[i].initial_lr) groups[i].initial_lr = groups[i].lr;
    } else {
      TT_CHECK(groups[i].initial_lr.has_value(), "param 'initial_lr' is not specified in param_groups[", i,
               "] when resuming an optimizer");
    }
    base_lrs.push_back(*groups[i].initial_lr);
  }
}

TT_DECL void LRScheduler::append_state(std::vector<std::pair<std::string, Tensor>>& out,
    const std::string& prefix) const {
  out.emplace_back(prefix + "last_epoch", detail::int_scalar(last_epoch));
  out.emplace_back(prefix + "_step_count", detail::int_scalar(step_count_));
  out.emplace_back(prefix + "base_lrs", detail::reals_tensor(base_lrs));
  out.emplace_back(prefix + "_last_lr", detail::reals_tensor(last_lr_));
}

TT_DECL void LRScheduler::read_state(detail::StateReader& in, const std::string& prefix, bool commit) {
  const size_t groups = optimizer_->param_groups().size();
  const int64_t epoch = in.integer(prefix + "last_epoch"), steps = in.integer(prefix + "_step_count");
  std::vector<double> base = in.reals(prefix + "base_lrs", groups), last = in.reals(prefix + "_last_lr", groups);
  if (!commit) return;
  last_epoch = epoch;
  step_count_ = steps;
  base_lrs = std::move(base);
  last_lr_ = std::move(last);
}

TT_DECL void LRScheduler::initial_step() {
  step_count_ = 0;
  is_initial_ = true;
  step();
  is_initial_ = false;
}

TT_DECL void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<double> values;
  if (!epoch) {
    ++last_epoch;
    values = get_lr();
  } else {
    last_epoch = *epoch;
    auto closed = closed_form_lr();
    values = closed ? *closed : get_lr();
  }
  auto& groups = optimizer_->param_groups();
  for (size_t i = 0; i < groups.size() && i < values.size(); ++i) groups[i].lr = values[i];
  last_lr_.clear();
  for (const ParamGroup& g : groups) last_lr_.push_back(g.lr);
}

TT_DECL void LRScheduler::warn_if_before_optimizer_step() const {
  if (step_count_ != 1 || optimizer_->step_count() >= 1) return;
  if (detail::order_warnings()++ == 0) std::fprintf(stderr, "UserWarning: %s\n", detail::order_warning_text());
}

TT_DECL std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (const ParamGroup& g : optimizer_->param_groups()) out.push_back(g.lr);
  return out;
}

TT_DECL LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters,
    int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), start_factor(start_factor), end_factor(end_factor),
      total_iters(total_iters) {
  TT_CHECK(!(start_factor > 1.0 || start_factor <= 0),
           "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  TT_CHECK(!(end_factor > 1.0 || end_factor < 0), "Ending multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

TT_DECL void LinearLR::append_state(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const {
  LRScheduler::append_state(out, prefix);
  out.emplace_back(prefix + "start_factor", detail::real_scalar(start_factor));
  out.emplace_back(prefix + "end_factor", detail::real_scalar(end_factor));
  out.emplace_back(prefix + "total_iters", detail::int_scalar(total_iters));
}

TT_DECL void LinearLR::read_state(detail::StateReader& in, const std::string& prefix, bool commit) {
  LRScheduler::read_state(in, prefix, commit);
  const double s = in.real(prefix + "start_factor"), e = in.real(prefix + "end_factor");
  const int64_t n = in.integer(prefix + "total_iters");
  // The constructor's checks: start_factor 0 would divide by zero in get_lr (lr inf or nan;
  // PyTorch raises ZeroDivisionError there).
  TT_CHECK(!(s > 1.0 || s <= 0) && !std::isnan(s), "LRScheduler.load_state_dict: ", prefix,
           "start_factor: Starting multiplicative factor expected to be greater than 0 and less or equal to 1., got ",
           optim::detail::py_float(s));
  TT_CHECK(!(e > 1.0 || e < 0) && !std::isnan(e), "LRScheduler.load_state_dict: ", prefix,
           "end_factor: Ending multiplicative factor expected to be between 0 and 1., got ", optim::detail::py_float(e));
  if (commit) start_factor = s, end_factor = e, total_iters = n;
}

TT_DECL std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch == 0) {
    for (double& lr : lrs) lr *= start_factor;
    return lrs;
  }
  if (is_initial_ || last_epoch > total_iters) return lrs;
  // lr_k / lr_{k-1} = factor(k) / factor(k-1)
  const double ratio = 1.0 + (end_factor - start_factor) /
                                 (total_iters * start_factor + (last_epoch - 1) * (end_factor - start_factor));
  for (double& lr : lrs) lr *= ratio;
  return lrs;
}

TT_DECL std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base_lr : base_lrs)
    lrs.push_back(base_lr * (start_factor + (end_factor - start_factor) *
                                                static_cast<double>(std::min(total_iters, last_epoch)) /
                                                static_cast<double>(total_iters)));
  return lrs;
}

TT_DECL CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), T_max(T_max), eta_min(eta_min) {
  TT_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}

TT_DECL void CosineAnnealingLR::append_state(std::vector<std::pair<std::string, Tensor>>& out,
    const std::string& prefix) const {
  LRScheduler::append_state(out, prefix);
  out.emplace_back(prefix + "T_max", detail::int_scalar(T_max));
  out.emplace_back(prefix + "eta_min", detail::real_scalar(eta_min));
}

TT_DECL void CosineAnnealingLR::read_state(detail::StateReader& in, const std::string& prefix, bool commit) {
  LRScheduler::read_state(in, prefix, commit);
  const int64_t t = in.integer(prefix + "T_max");
  const double e = in.real(prefix + "eta_min");
  TT_CHECK(t > 0, "LRScheduler.load_state_dict: ", prefix, "T_max must be positive, got ", t);
  if (commit) T_max = t, eta_min = e;
}

TT_DECL std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const double pi = kPi, e = static_cast<double>(last_epoch), T = static_cast<double>(T_max);
  if (is_initial_) return lrs;
  if (step_count_ == 1 && last_epoch > 0) {  // resumed at a later epoch: the closed form
    lrs = *closed_form_lr();
  } else if ((last_epoch - 1 - T_max) % (2 * T_max) == 0) {
    // One step past a minimum (k = T_max + 1, 3 T_max + 1, ...): the ratio below would divide
    // by 1 + cos(pi) = 0, so add the increment of the closed form instead.
    for (size_t i = 0; i < lrs.size(); ++i) lrs[i] += (base_lrs[i] - eta_min) * (1 - std::cos(pi / T)) / 2;
  } else {
    for (double& lr : lrs)
      lr = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lr - eta_min) + eta_min;
  }
  return lrs;
}

TT_DECL std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double e = static_cast<double>(last_epoch), T = static_cast<double>(T_max);
  for (double base_lr : base_lrs) lrs.push_back(eta_min + (base_lr - eta_min) * (1 + std::cos(kPi * e / T)) / 2);
  return lrs;
}

TT_DECL StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), step_size(step_size), gamma(gamma) {
  TT_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}

TT_DECL void StepLR::append_state(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const {
  LRScheduler::append_state(out, prefix);
  out.emplace_back(prefix + "step_size", detail::int_scalar(step_size));
  out.emplace_back(prefix + "gamma", detail::real_scalar(gamma));
}

TT_DECL void StepLR::read_state(detail::StateReader& in, const std::string& prefix, bool commit) {
  LRScheduler::read_state(in, prefix, commit);
  const int64_t n = in.integer(prefix + "step_size");
  const double g = in.real(prefix + "gamma");
  TT_CHECK(n > 0, "LRScheduler.load_state_dict: ", prefix, "step_size must be positive, got ", n);
  if (commit) step_size = n, gamma = g;
}

TT_DECL std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch == 0 || last_epoch % step_size != 0) return lrs;
  for (double& lr : lrs) lr *= gamma;
  return lrs;
}

TT_DECL std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  // Python's floor division (last_epoch // step_size), also for a negative last_epoch.
  int64_t q = last_epoch / step_size;
  if ((last_epoch % step_size != 0) && (last_epoch < 0)) --q;
  std::vector<double> lrs;
  for (double base_lr : base_lrs) lrs.push_back(base_lr * std::pow(gamma, static_cast<double>(q)));
  return lrs;
}

TT_DECL SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
    std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(optimizer, -1), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  TT_CHECK(!schedulers_.empty(), "SequentialLR expects at least one scheduler, but got no scheduler.");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    TT_CHECK(schedulers_[i] != nullptr, "SequentialLR: scheduler at index ", i, " is null");
    TT_CHECK(&schedulers_[i]->optimizer() == &optimizer, "SequentialLR expects all schedulers to belong to the "
             "same optimizer, but got scheduler ", schedulers_[i]->name(), " at index ", i,
             " that belongs to a different optimizer.");
  }
  TT_CHECK(milestones_.size() + 1 == schedulers_.size(),
           "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
           "milestone points, but got number of schedulers ", schedulers_.size(),
           " and the number of milestones to be equal to ", milestones_.size());
  this->last_epoch = last_epoch + 1;
  // Reset learning rates back to initial values.
  for (ParamGroup& g : optimizer.param_groups()) g.lr = *g.initial_lr;
  // "Undo" the step performed by the other schedulers' constructors ...
  for (auto& s : schedulers_) recursive_undo(*s);
  // ... and perform the initial step for only the first scheduler.
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

TT_DECL void SequentialLR::step() {
  ++last_epoch;
  const size_t idx = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch) - milestones_.begin());
  LRScheduler& scheduler = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch) scheduler.update_lr(0);
  else scheduler.step();
  last_lr_ = scheduler.get_last_lr();
}

TT_DECL void SequentialLR::append_state(std::vector<std::pair<std::string, Tensor>>& out,
    const std::string& prefix) const {
  out.emplace_back(prefix + "last_epoch", detail::int_scalar(last_epoch));
  out.emplace_back(prefix + "_last_lr", detail::reals_tensor(last_lr_));
  Tensor m = empty({static_cast<int64_t>(milestones_.size())}, kInt64);
  for (size_t i = 0; i < milestones_.size(); ++i) m.data_ptr<int64_t>()[i] = milestones_[i];
  out.emplace_back(prefix + "_milestones", m);
  for (size_t i = 0; i < schedulers_.size(); ++i)
    schedulers_[i]->append_state(out, prefix + "_schedulers." + std::to_string(i) + ".");
}

TT_DECL void SequentialLR::read_state(detail::StateReader& in, const std::string& prefix, bool commit) {
  const int64_t epoch = in.integer(prefix + "last_epoch");
  std::vector<double> last = in.reals(prefix + "_last_lr", optimizer_->param_groups().size());
  const Tensor& m = in.get(prefix + "_milestones");
  TT_CHECK(m.dtype() == kInt64 && m.dim() == 1 && m.numel() == static_cast<int64_t>(milestones_.size()),
           "LRScheduler.load_state_dict: ", prefix, "_milestones must be ", milestones_.size(),
           " int64 value(s) (one fewer than the schedulers), got ", dtype_name(m.dtype()), " of shape ",
           shape_str(m.sizes()));
  const Tensor mc = m.contiguous();
  std::vector<int64_t> ms(mc.data_ptr<int64_t>(), mc.data_ptr<int64_t>() + mc.numel());
  for (size_t i = 0; i < schedulers_.size(); ++i)
    schedulers_[i]->read_state(in, prefix + "_schedulers." + std::to_string(i) + ".", commit);
  if (!commit) return;
  last_epoch = epoch;
  last_lr_ = std::move(last);
  milestones_ = std::move(ms);
}

TT_DECL void SequentialLR::recursive_undo(LRScheduler& s) {
  if (auto* seq = dynamic_cast<SequentialLR*>(&s)) {
    for (auto& inner : seq->schedulers_) recursive_undo(*inner);
  } else {
    --s.last_epoch;
  }
}

}  TT_NAMESPACE_END  // namespace tinytorch::optim::lr_scheduler
