// ch04 exercise 3 (caveat): a standalone copy of busy_work's calibration; -O3 -march=native vs -O2 changes how long busy_work(50) lasts.
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <algorithm>
inline void spin_iterations(uint64_t n) { volatile uint64_t x = 0; for (uint64_t i = 0; i < n; ++i) x = x + i; }
double rate() { double best = 0; for (int t = 0; t < 20; ++t) { auto t0 = std::chrono::steady_clock::now(); spin_iterations(uint64_t{1} << 16);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); if (ms > 0) best = std::max(best, 65536.0 / ms); } return best; }
int main() {
  double r = rate();
  for (int k = 0; k < 3; ++k) { auto t0 = std::chrono::steady_clock::now(); spin_iterations((uint64_t)(50 * r));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("calibrated %.0f iterations/ms; busy_work(50 ms) took %.1f ms\n", r, ms); }
  double r2 = rate(); std::printf("recalibrated after warm-up: %.0f iterations/ms\n", r2);
}
