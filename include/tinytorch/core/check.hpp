// tinytorch/core/check.hpp — tinytorch::Error and the TT_CHECK macro.
//
// Every bad input raises tinytorch::Error (a std::runtime_error) whose message names the
// operation and the offending shapes, values or file, e.g.
//   "mse_loss: input shape [4, 1] does not match target shape [4]".
// Library code never calls exit(); the one exception is distributed/'s MPI_Abort during an
// exception, so that other ranks are not left waiting in a collective.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

/// The one exception type tinytorch throws for user errors (bad shapes, dtypes, files, ...).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Thrown by code that is not written yet: the student skeletons of labs/ (scripts/lab.py
/// replaces each `// BEGIN SOLUTION` ... `// END SOLUTION` body with a throw of this), the way
/// Python code raises NotImplementedError. The message reads "<where>: not implemented", which
/// `scripts/lab.sh check` reports as "not implemented" instead of a failure. A tinytorch::Error,
/// so code that catches Error catches it too.
class NotImplemented : public Error {
 public:
  explicit NotImplemented(const std::string& where) : Error(where + ": not implemented") {}
};

namespace detail {
template <typename... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

TT_NAMESPACE_END  // namespace tinytorch

/// TT_CHECK(cond, parts...): throws tinytorch::Error(parts...) when cond is false. The parts are
/// streamed together, so shapes and numbers can be passed directly:
///   TT_CHECK(a.dim() == 2, "mm: expected a 2-D tensor, got shape ", a.sizes());
#define TT_CHECK(cond, ...)                                                   \
  do {                                                                        \
    if (!(cond)) throw ::tinytorch::Error(::tinytorch::detail::str_cat(__VA_ARGS__)); \
  } while (0)
