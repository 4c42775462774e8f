// tinytorch/autograd/grad_mode.hpp — is the autograd recording? NoGradGuard.
//
// While grad mode is off (inside a NoGradGuard), ops build no graph: results have no grad_fn
// and do not require grad. Optimizer steps and evaluation run this way, as under
// `with torch.no_grad():`. The flag is per thread (thread_local), as in PyTorch.
#pragma once

namespace tinytorch {

struct GradMode {
  static bool& flag() {
    thread_local bool enabled = true;
    return enabled;
  }
  static bool is_enabled() { return flag(); }
  static void set_enabled(bool enabled) { flag() = enabled; }
};

/// RAII: disables gradient recording for its lifetime and restores the previous mode after
/// (torch::NoGradGuard / `with torch.no_grad()`).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tinytorch
