// tinytorch/autograd/grad_mode.hpp — is the autograd recording? AutoGradMode, NoGradGuard.
//
// While grad mode is off (inside a NoGradGuard), ops build no graph: results have no grad_fn
// and do not require grad. Optimizer steps and evaluation run this way, as under
// `with torch.no_grad():`. The flag is per thread (thread_local), as in PyTorch.
// Chapter: chapters/02-autograd.md.
#pragma once

#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

struct GradMode {
  static bool& flag() {
    thread_local bool enabled = true;
    return enabled;
  }
  static bool is_enabled() { return flag(); }
  static void set_enabled(bool enabled) { flag() = enabled; }
};

/// RAII: sets grad mode to `enabled` for its lifetime and restores the previous mode after
/// (PyTorch's C++ torch::AutoGradMode; AutoGradMode(true) is `with torch.enable_grad()`).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

/// RAII: disables gradient recording for its lifetime and restores the previous mode after
/// (torch::NoGradGuard / `with torch.no_grad()`).
struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};

TT_NAMESPACE_END  // namespace tinytorch
