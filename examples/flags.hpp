// examples/flags.hpp — strict checks of numeric command-line values, shared by the examples (as
// CLI11 validators) and bench/bench_allreduce.cpp (which parses argv by hand).
//
//   app.add_option("--lr", cfg.lr, "...")->check(flags::real_in(0, kInf, flags::kLowOpen));
//   app.add_option("--epochs", cfg.epochs, "...")->check(flags::integer_in(1, 1000000));
//   o.max_bytes = flags::parse_integer("bench_allreduce", "--max-bytes", text, 4, int64_t{1} << 30);
//
// A value passes only if the whole text is a decimal integer (or a finite real number) inside the
// stated range; otherwise the message names the value and the range. CLI11 prefixes it with the
// flag ("--lr: ...") and CLI11_PARSE exits non-zero; parse_integer throws std::invalid_argument
// with the program and the flag in the message.
// Why not CLI11's own PositiveNumber / Range: CLI11 2.1 lets NaN through both (every comparison
// with NaN is false), and clamps an integer that overflows int64 to INT64_MAX without a word.
#pragma once

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#if __has_include(<CLI/CLI.hpp>)
#include <CLI/CLI.hpp>
#endif

namespace flags {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Which ends of a real range are open: kClosed [lo, hi], kLowOpen (lo, hi], kHighOpen [lo, hi).
enum Ends { kClosed, kLowOpen, kHighOpen };

inline std::string real_str(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Why `text` is not a decimal integer in [lo, hi]; "" if it is.
inline std::string integer_error(const std::string& text, long long lo, long long hi) {
  const std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || *end != '\0')
    return "'" + text + "' is not an integer; expected " + range;
  if (errno == ERANGE || v < lo || v > hi) return "'" + text + "' is out of range; expected " + range;
  return "";
}

/// Why `text` is not a finite real number in the range from lo to hi (ends as `ends` says); "".
inline std::string real_error(const std::string& text, double lo, double hi, Ends ends = kClosed) {
  const std::string range = std::string("a finite number in ") + (ends == kLowOpen ? "(" : "[") + real_str(lo) +
                            ", " + real_str(hi) + (ends == kHighOpen || std::isinf(hi) ? ")" : "]");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || *end != '\0')
    return "'" + text + "' is not a number; expected " + range;
  const bool below = ends == kLowOpen ? v <= lo : v < lo;
  const bool above = ends == kHighOpen ? v >= hi : v > hi;
  if (!std::isfinite(v) || (errno == ERANGE && v != 0) || below || above)
    return "'" + text + "' is out of range; expected " + range;
  return "";
}

/// Why `text` is not a seed (a decimal integer in [0, 2^64 - 1]); "".
inline std::string seed_error(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' || errno == ERANGE)
    return "'" + text + "' is not a seed; expected an integer in [0, 18446744073709551615]";
  return "";
}

/// `text` as an integer in [lo, hi]; throws std::invalid_argument "<program>: <flag>: <why>".
inline long long parse_integer(const std::string& program, const std::string& flag, const std::string& text,
                               long long lo, long long hi) {
  const std::string why = integer_error(text, lo, hi);
  if (!why.empty()) throw std::invalid_argument(program + ": " + flag + ": " + why);
  return std::strtoll(text.c_str(), nullptr, 10);
}

#if __has_include(<CLI/CLI.hpp>)
/// CLI11 validator: an integer in [lo, hi] (each element of a delimited list).
inline CLI::Validator integer_in(long long lo, long long hi) {
  return CLI::Validator([=](std::string& s) { return integer_error(s, lo, hi); },
                        "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

/// CLI11 validator: a finite real number between lo and hi (ends as `ends` says).
inline CLI::Validator real_in(double lo, double hi, Ends ends = kClosed) {
  return CLI::Validator([=](std::string& s) { return real_error(s, lo, hi, ends); },
                        "finite NUMBER from " + real_str(lo) + " to " + real_str(hi));
}

/// CLI11 validator: a seed, an integer in [0, 2^64 - 1] (CLI11 2.1 wraps "-1" to 2^64 - 1).
inline CLI::Validator seed() { return CLI::Validator(seed_error, "UINT64"); }
#endif

}  // namespace flags
