// tinytorch/amp/grad_scaler.hpp — amp::GradScaler: dynamic loss scaling for float16 training
// (torch.amp.GradScaler).
// A float16 gradient below 2^-24 is 0 (core/half.hpp). Loss scaling multiplies the loss by S
// before backward, so every gradient is S times larger and stays representable, then divides the
// gradients by S (in float32, the master weights' dtype) before the optimizer uses them:
//   scaled = scaler.scale(loss)      // loss * S (S: a 1-element float32 tensor, 2^16 at first)
//   scaled.backward();               // gradients S * dL/dw
//   scaler.step(opt);                // unscale_: g *= 1/S, found_inf = any g not finite;
//                                    // opt.step() only when found_inf is 0 (else the step is skipped)
//   scaler.update();                 // found_inf: S *= backoff_factor (0.5), tracker = 0;
//                                    // else ++tracker, and after growth_interval (2000) clean steps
//                                    // in a row S *= growth_factor (2) (kept if finite), tracker = 0
// S therefore settles just below the largest scale at which no gradient overflows. The stages
// per optimizer (READY -> UNSCALED -> STEPPED, back to READY at update()) and the errors follow
// PyTorch 1.13's grad_scaler.py word for word (unscale_ twice or after step, step twice, step
// before scale, no inf checks recorded, FP16 gradients to unscale, an empty state dict), each a
// tinytorch::Error where PyTorch raises AssertionError, ValueError or RuntimeError.
// The two kernels PyTorch runs on CUDA, _amp_foreach_non_finite_check_and_unscale_ and
// _amp_update_scale_, are written out in unscale_grads() and update_scale() below.
// With enabled = false every method is a pass-through (scale returns its input, step calls
// opt.step(), get_scale() is 1), as PyTorch's.
// Differences: the scale lives on the device of the first scaled output (PyTorch's constructor
// also takes a device name, only to check it); step() returns whether the optimizer stepped
// (PyTorch returns the optimizer's return value, None when skipped).
// Chapter: chapters/11-mixed-precision.md (the loss-scaling loop and its trace). Reference:
// torch.amp.GradScaler docs; Micikevicius et al., "Mixed Precision Training" (ICLR 2018), 3.2.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END
#include "tinytorch/optim/optimizer.hpp"
#include "tinytorch/tensor.hpp"

TT_NAMESPACE_BEGIN namespace amp {

/// GradScaler's constructor arguments (torch.amp.GradScaler's, same defaults).
struct GradScalerOptions {
  double init_scale = 65536.0;  ///< S before the first update (2^16)
  double growth_factor = 2.0;   ///< S *= growth_factor after growth_interval clean steps
  double backoff_factor = 0.5;  ///< S *= backoff_factor after a step with an inf/NaN gradient
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions o = {}) : o_(o) {
    if (!o.enabled) return;
    TT_CHECK(o.growth_factor > 1.0, "The growth factor must be > 1.0. (GradScaler got ", o.growth_factor, ")");
    TT_CHECK(o.backoff_factor < 1.0, "The backoff factor must be < 1.0. (GradScaler got ", o.backoff_factor, ")");
  }
  virtual ~GradScaler() = default;

  /// outputs * S (S a 1-element float32 tensor on outputs' device: a 0-d loss becomes shape (1),
  /// and a float16 loss a float32 one, as PyTorch's). Creates S (init_scale) on first use.
  Tensor scale(const Tensor& outputs) {
    if (!o_.enabled) return outputs;
    TT_CHECK(outputs.defined(), "GradScaler.scale: outputs must be a Tensor or an iterable of Tensors");
    if (!scale_.defined()) scale_ = full({1}, o_.init_scale, TensorOptions(kFloat32).device(outputs.device()));
    return outputs * scale_.to(outputs.device());
  }
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs) {
    std::vector<Tensor> out;
    for (const Tensor& t : outputs) out.push_back(scale(t));
    return out;
  }

  /// Divides opt's gradients by S in place and records whether any is inf or NaN. Optional: step()
  /// calls it when it was not called; call it yourself to clip the true gradients in between.
  void unscale_(optim::Optimizer& opt) {
    if (!o_.enabled) return;
    check_scale("unscale_");
    OptState& st = states_[&opt];
    TT_CHECK(st.stage != Stage::Unscaled,
             "unscale_() has already been called on this optimizer since the last update().");
    TT_CHECK(st.stage != Stage::Stepped, "unscale_() is being called after step().");
    // PyTorch: self._scale.double().reciprocal().float()
    const double inv_scale = static_cast<float>(1.0 / scale_value());
    st.found_inf = found_inf_on_any_rank(unscale_grads(opt, inv_scale, &st.checked, allow_fp16_));
    st.stage = Stage::Unscaled;
  }

  /// unscale_(opt) unless done, then opt.step() unless a gradient was inf/NaN. Returns whether
  /// the optimizer stepped.
  bool step(optim::Optimizer& opt) {
    if (!o_.enabled) {
      opt.step();
      return true;
    }
    check_scale("step");
    OptState& st = states_[&opt];
    TT_CHECK(st.stage != Stage::Stepped, "step() has already been called since the last update().");
    if (st.stage == Stage::Ready) unscale_(opt);
    TT_CHECK(st.checked, "No inf checks were recorded for this optimizer.");
    const bool stepped = !st.found_inf;
    if (stepped) opt.step();
    st.stage = Stage::Stepped;
    return stepped;
  }

  /// Updates S from this iteration's inf checks (see the top of the file), or sets it to
  /// new_scale, then readies every optimizer for the next iteration.
  void update() { update_impl(false, 0.0); }
  void update(double new_scale) { update_impl(true, new_scale); }

  /// S as a number: init_scale before the first scale(), 1 when disabled.
  double get_scale() const {
    if (!o_.enabled) return 1.0;
    return scale_.defined() ? scale_value() : o_.init_scale;
  }
  double get_growth_factor() const { return o_.growth_factor; }
  void set_growth_factor(double f) { o_.growth_factor = f; }
  double get_backoff_factor() const { return o_.backoff_factor; }
  void set_backoff_factor(double f) { o_.backoff_factor = f; }
  int64_t get_growth_interval() const { return o_.growth_interval; }
  void set_growth_interval(int64_t n) { o_.growth_interval = n; }
  /// Clean steps in a row since S last changed (PyTorch's _get_growth_tracker()).
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return o_.enabled; }

  /// {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} (PyTorch's
  /// keys), or {} when disabled.
  std::map<std::string, double> state_dict() const {
    if (!o_.enabled) return {};
    return {{"scale", get_scale()},
            {"growth_factor", o_.growth_factor},
            {"backoff_factor", o_.backoff_factor},
            {"growth_interval", static_cast<double>(o_.growth_interval)},
            {"_growth_tracker", static_cast<double>(growth_tracker_)}};
  }
  void load_state_dict(const std::map<std::string, double>& sd) {
    if (!o_.enabled) return;
    TT_CHECK(!sd.empty(), "The source state dict is empty, possibly because it was saved from a disabled instance "
             "of GradScaler.");
    for (const char* key : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
      TT_CHECK(sd.count(key), "GradScaler.load_state_dict: missing key '", key, "'");
    for (const char* key : {"growth_interval", "_growth_tracker"}) {  // integers (PyTorch keeps them as ints)
      const double v = sd.at(key);
      TT_CHECK(v >= 0 && v <= 9007199254740992.0 && v == std::floor(v), "GradScaler.load_state_dict: '", key,
               "' must be a non-negative integer, got ", v);
    }
    o_.init_scale = sd.at("scale");
    o_.growth_factor = sd.at("growth_factor");
    o_.backoff_factor = sd.at("backoff_factor");
    o_.growth_interval = static_cast<int64_t>(sd.at("growth_interval"));
    growth_tracker_ = static_cast<int64_t>(sd.at("_growth_tracker"));
    if (scale_.defined()) {
      NoGradGuard ng;
      scale_.fill_(o_.init_scale);
    }
  }

 protected:
  /// Whether any rank found an inf or NaN, given this rank's answer: this rank's alone here;
  /// distributed::ShardedGradScaler asks every rank (each holds a shard of the gradients).
  virtual bool found_inf_on_any_rank(bool found_inf_here) { return found_inf_here; }
  /// ShardedGradScaler unscales float16 gradients too (PyTorch's allow_fp16=True there).
  bool allow_fp16_ = false;

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptState {
    Stage stage = Stage::Ready;
    bool checked = false;    // some gradient was inf-checked (PyTorch: found_inf_per_device not empty)
    bool found_inf = false;  // one of them was inf or NaN
  };

  void check_scale(const char* fn) const {
    TT_CHECK(scale_.defined(), "Attempted ", fn, " but _scale is None.  This may indicate your script did not use "
             "scaler.scale(loss or outputs) earlier in the iteration.");
  }
  double scale_value() const { return scale_.to(Device::cpu()).item<double>(); }

  /// _amp_foreach_non_finite_check_and_unscale_ over opt's gradients: g *= inv_scale (in g's dtype,
  /// the product computed in float32 and rounded once; skipped when inv_scale is 1, as PyTorch's
  /// kernel), and true when any element of any gradient is inf or NaN. *checked: some gradient seen.
  static bool unscale_grads(optim::Optimizer& opt, double inv_scale, bool* checked, bool allow_fp16) {
    NoGradGuard ng;
    std::vector<Tensor> grads;  // all checked before any is changed, so an error leaves them as they were
    for (optim::ParamGroup& group : opt.param_groups())
      for (Tensor& p : group.params) {
        Tensor g = p.grad();
        if (!g.defined()) continue;
        TT_CHECK(allow_fp16 || g.dtype() != kFloat16, "Attempting to unscale FP16 gradients.");
        grads.push_back(g);
      }
    bool found_inf = false;
    for (Tensor& g : grads) {
      *checked = true;
      // finite iff its largest |value| is (max propagates NaN)
      if (g.numel() > 0 && !std::isfinite(g.abs().max().item<double>())) found_inf = true;
      if (inv_scale != 1.0) g.mul_(scalar_tensor(inv_scale, TensorOptions(kFloat32).device(g.device())));
    }
    return found_inf;
  }

  void update_impl(bool has_new_scale, double new_scale) {
    if (!o_.enabled) return;
    check_scale("update");
    NoGradGuard ng;
    if (has_new_scale) {
      scale_.fill_(new_scale);
    } else {
      bool any_checked = false, found_inf = false;
      for (const auto& [opt, st] : states_) {
        any_checked |= st.checked;
        found_inf |= st.found_inf;
      }
      TT_CHECK(any_checked, "No inf checks were recorded prior to update.");
      update_scale(found_inf);
    }
    states_.clear();
  }

  /// _amp_update_scale_: S and the growth tracker after one iteration (S, a float32, times the
  /// double factor, rounded to float32, as PyTorch's kernel).
  void update_scale(bool found_inf) {
    const double s = scale_value();
    if (found_inf) {
      scale_.fill_(static_cast<double>(static_cast<float>(s * o_.backoff_factor)));
      growth_tracker_ = 0;
    } else if (growth_tracker_ + 1 == o_.growth_interval) {
      const float grown = static_cast<float>(s * o_.growth_factor);
      if (std::isfinite(grown)) scale_.fill_(static_cast<double>(grown));
      growth_tracker_ = 0;
    } else {
      ++growth_tracker_;
    }
  }

  GradScalerOptions o_;
  Tensor scale_;  // (1) float32; undefined until the first scale()
  int64_t growth_tracker_ = 0;
  std::map<const optim::Optimizer*, OptState> states_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::amp
