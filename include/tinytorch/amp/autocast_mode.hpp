// tinytorch/amp/autocast_mode.hpp — tt::autocast, the RAII guard of torch.autocast: inside it, the
// ops on two lists run in the dtype that suits them, whatever dtype their inputs have.
//   {
//     tt::autocast ac("cpu");                 // dtype: bfloat16 for "cpu", float16 for "cuda"
//     Tensor y = model.forward(x);            // Linear's matmul in bfloat16 ...
//     Tensor loss = tt::cross_entropy(y, t);  // ... the loss in float32
//   }
//   loss.backward();                          // through the casts to the float32 master weights
// The lists (PyTorch's autocast_mode.cpp names them by cast policy):
//   lower_precision_fp  matmul, mm, linear, conv2d, scaled_dot_product_attention: float32 inputs
//                       are cast to the autocast dtype (the GEMMs, where 16 bits halve the bytes
//                       and tensor cores run).
//   fp32                softmax, log_softmax, nll_loss, cross_entropy, mse_loss, sum, mean,
//                       layer_norm, batch_norm: float16/bfloat16 inputs are cast to float32 (the
//                       exponentials, reductions and normalisations, where 8 or 11 bits of mantissa
//                       lose the answer). PyTorch's list has neither mean nor batch_norm; here
//                       they are cast too, so every reduction of a loss runs in float32.
// Only floating tensors on the guard's device type are cast; float64 tensors never are (as
// PyTorch's cached_cast). Every other op runs in its inputs' dtype (type promotion as usual: a
// bfloat16 activation plus a float32 bias is float32).
// The casts are Tensor::to, so autograd sees them: the gradient reaching a float32 parameter is
// float32. Within one outermost guard, the bfloat16/float16 copy of a float32 leaf that requires
// grad (a weight) is made once and reused (PyTorch's cast cache; cache_enabled = false turns it
// off); the cache is cleared when the outermost guard ends.
// Guards nest (an inner one with enabled=false runs its ops as written); the state is per thread.
// Errors (tinytorch::Error): a device type other than "cpu" and "cuda"; a dtype the device does not
// autocast to (kInt64, kFloat32), where PyTorch warns and runs without autocast: a silently
// disabled autocast would train another model than the one asked for.
// Ops compiled into the library consult the state through functional.ipp (amp::detail::Autocast).
// Chapter: chapters/11-mixed-precision.md. Reference: torch.autocast, ATen's autocast_mode.cpp.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END
#include "tinytorch/core/dtype.hpp"
#include "tinytorch/tensor.hpp"

TT_NAMESPACE_BEGIN

namespace amp {
/// How an op on autocast's lists treats its floating inputs.
enum class CastPolicy { LowerPrecisionFp, Fp32 };

namespace detail {
/// One thread's autocast state; index 0 is "cpu", 1 is "cuda".
struct AutocastState {
  bool enabled[2] = {false, false};
  DType dtype[2] = {kBFloat16, kFloat16};  // torch.get_autocast_cpu_dtype() / get_autocast_gpu_dtype()
  bool cache_enabled = true;
  int nesting = 0;      // live guards (enabled or not)
  int excluded = 0;     // > 0 inside an op that has applied autocast: its inner ops run as written
  std::map<const TensorImpl*, std::pair<Tensor, Tensor>> cache;  // leaf -> (leaf, its cast copy)
};
inline AutocastState& state() {
  static thread_local AutocastState s;
  return s;
}
inline int device_index(const std::string& device_type) {
  if (device_type == "cpu") return 0;
  if (device_type == "cuda") return 1;
  throw Error("autocast: User specified autocast device_type must be 'cuda' or 'cpu', but got '" + device_type + "'");
}
inline int device_index(Device d) { return d.is_cpu() ? 0 : 1; }

/// The autocast step of one op call. If autocast is on for the device of the op's first defined
/// operand (and the op is not running inside another autocast op), active() is true, cast()
/// applies the policy, and inner ops run without autocast while this object lives:
///   if (amp::detail::Autocast ac(CastPolicy::LowerPrecisionFp, {&a, &b}); ac.active())
///     return mm(ac.cast(a), ac.cast(b));
class Autocast {
 public:
  Autocast(CastPolicy policy, std::initializer_list<const Tensor*> operands) : policy_(policy) {
    AutocastState& s = state();
    if (s.excluded > 0) return;
    for (const Tensor* t : operands) {
      if (!t->defined()) continue;
      device_ = device_index(t->device());
      active_ = s.enabled[device_];
      break;
    }
    if (!active_) return;
    target_ = policy == CastPolicy::Fp32 ? kFloat32 : s.dtype[device_];
    ++s.excluded;
  }
  ~Autocast() {
    if (active_) --state().excluded;
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

  bool active() const { return active_; }
  /// t in the op's dtype: cast when it is a floating tensor on the guard's device type, not float64,
  /// of another dtype (fp32 policy: only float16/bfloat16 are cast); else t itself.
  Tensor cast(const Tensor& t) const {
    if (!active_ || !t.defined() || device_index(t.device()) != device_) return t;
    const DType d = t.dtype();
    if (!is_floating_point(d) || d == kFloat64 || d == target_) return t;
    if (policy_ == CastPolicy::Fp32 && !is_reduced_floating_point(d)) return t;
    AutocastState& s = state();
    const bool cacheable = s.cache_enabled && policy_ == CastPolicy::LowerPrecisionFp && d == kFloat32 &&
                           t.requires_grad() && t.is_leaf() && !t._is_view();
    if (!cacheable) return t.to(target_);
    auto it = s.cache.find(t.impl());
    if (it != s.cache.end() && it->second.second.dtype() == target_) return it->second.second;
    Tensor c = t.to(target_);
    s.cache[t.impl()] = {t, c};
    return c;
  }

 private:
  CastPolicy policy_;
  bool active_ = false;
  int device_ = 0;
  DType target_ = kFloat32;
};
}  // namespace detail

/// torch.is_autocast_enabled (device "cuda") / is_autocast_cpu_enabled ("cpu") on this thread.
inline bool is_autocast_enabled(const std::string& device_type = "cuda") {
  return detail::state().enabled[detail::device_index(device_type)];
}
/// The dtype autocast casts to on `device_type` (torch.get_autocast_dtype): bfloat16 for "cpu",
/// float16 for "cuda" unless a guard set another.
inline DType get_autocast_dtype(const std::string& device_type) {
  return detail::state().dtype[detail::device_index(device_type)];
}
/// Drops the cached casts of the weights (torch.clear_autocast_cache); the outermost guard's end
/// does it.
inline void clear_autocast_cache() { detail::state().cache.clear(); }
}  // namespace amp

/// torch.autocast as a scope guard: autocast(device_type, dtype, enabled, cache_enabled). dtype
/// defaults to the device's autocast dtype (bfloat16 on "cpu", float16 on "cuda"); the "cpu" device
/// type takes bfloat16 or float16, "cuda" float16 or bfloat16. See the top of the file.
class autocast {
 public:
  explicit autocast(const std::string& device_type, std::optional<DType> dtype = std::nullopt, bool enabled = true,
                    std::optional<bool> cache_enabled = std::nullopt)
      : device_(amp::detail::device_index(device_type)) {
    amp::detail::AutocastState& s = amp::detail::state();
    const DType d = dtype ? *dtype : s.dtype[device_];
    if (enabled)
      TT_CHECK(is_reduced_floating_point(d), "autocast: In ", device_ == 0 ? "CPU" : "CUDA",
               " autocast, but the target dtype is not supported (got ", dtype_name(d), "). ",
               device_ == 0 ? "CPU" : "CUDA", " Autocast only supports dtype of torch.bfloat16, torch.float16 "
               "currently. (PyTorch warns and disables autocast here; tinytorch raises: see amp/autocast_mode.hpp)");
    prev_enabled_ = s.enabled[device_];
    prev_dtype_ = s.dtype[device_];
    prev_cache_ = s.cache_enabled;
    s.enabled[device_] = enabled;
    if (enabled) s.dtype[device_] = d;
    if (cache_enabled) s.cache_enabled = *cache_enabled;
    ++s.nesting;
  }
  ~autocast() {
    amp::detail::AutocastState& s = amp::detail::state();
    if (--s.nesting == 0) s.cache.clear();
    s.enabled[device_] = prev_enabled_;
    s.dtype[device_] = prev_dtype_;
    s.cache_enabled = prev_cache_;
  }
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  int device_;
  bool prev_enabled_ = false;
  DType prev_dtype_ = kFloat32;
  bool prev_cache_ = true;
};

TT_NAMESPACE_END  // namespace tinytorch
