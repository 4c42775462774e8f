// examples/format_bytes.hpp — a byte count in the decimal unit (B, kB, MB, GB, TB, PB) that puts
// 1 <= value < 1000, as the calculators print it: format_bytes(940584, 3) = "940.584 kB",
// format_bytes(1.875e9, 2) = "1.88 GB" (whole bytes without decimals). GB = 10^9 bytes, the unit
// of the book and of the ZeRO paper. Used by allreduce_calculator and zero_calculator.
#pragma once

#include <cstdio>
#include <string>

namespace examples {

inline std::string format_bytes(double bytes, int decimals) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (u < 5 && bytes >= 1000.0) {
    bytes /= 1000.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", u == 0 ? 0 : decimals, bytes, units[u]);
  return buf;
}

}  // namespace examples
