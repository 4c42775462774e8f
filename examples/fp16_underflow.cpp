// examples/fp16_underflow.cpp — the book's loss-scaling lab: why float16 gradients need a scale.
//
//   build/bin/fp16_underflow                 # both parts below
//   build/bin/fp16_underflow --steps 40      # a longer training run
//
// First the formats' landmarks (largest, smallest normal and subnormal, eps) and a sum that stalls
// when it is accumulated in float16. Part 1: gradients from 1e-5 down to 1e-9 cast to float16. Below 2^-24 = 5.96e-8 (float16's
// smallest subnormal; 2^-25 and below round to 0) they flush to zero, and between 2^-24 and 2^-14
// = 6.1e-5 (subnormals) they keep only a few bits. Multiplied by a scale S = 2^16 first, they land
// among float16's normal numbers (11 significant bits) and survive; dividing by S in float32
// gives them back to within 2^-11 relative.
// Part 2: linear regression y = X w (X: rows x 16, a float32 master w) trained with SGD three
// ways: float32; autocast float16 with no scaler; autocast float16 with amp::GradScaler. The
// mean-squared error over many rows makes every dL/dy = 2 (y - t) / rows tiny: without a scale they
// fall below 2^-25 once |y - t| < 2^-25 rows / 2 (about 1e-3 for 65,536 rows) and flush to 0, and
// that run stalls; the scaled run keeps going until float16's rounding of y itself (about 2^-11 of
// |y|) is the error, as the float32 run goes on to float32's.
// Chapter: chapters/11-mixed-precision.md ("Where precision is lost", "Loss scaling"). Reference:
// the book's Mixed-Precision Training section and lab; Micikevicius et al., "Mixed Precision
// Training" (ICLR 2018), section 3.2 and Figure 3.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <tinytorch/tinytorch.hpp>

#include "flags.hpp"

namespace tt = tinytorch;

namespace {
/// The three formats' landmarks, read from their bit patterns (core/half.hpp).
void formats() {
  std::printf("%-9s | %11s | %12s | %12s | %12s | %9s\n", "format", "largest", "smallest", "smallest", "eps",
              "digits");
  std::printf("%-9s | %11s | %12s | %12s | %12s | %9s\n", "", "", "normal", "subnormal", "(1 ulp at 1)", "");
  auto row = [](const char* name, double max, double min_normal, double min_sub, double eps) {
    std::printf("%-9s | %11.5g | %12.4g | %12.4g | %12.4g | %9.1f\n", name, max, min_normal, min_sub, eps,
                -std::log10(eps));
  };
  row("float32", std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
      std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::epsilon());
  auto h = [](uint16_t bits) { return static_cast<double>(static_cast<float>(tt::Half::from_bits(bits))); };
  auto b = [](uint16_t bits) { return static_cast<double>(static_cast<float>(tt::BFloat16::from_bits(bits))); };
  row("float16", h(0x7BFF), h(0x0400), h(0x0001), h(0x3C01) - 1.0);
  row("bfloat16", b(0x7F7F), b(0x0080), b(0x0001), b(0x3F81) - 1.0);
  // Adding 0.1 to a running sum 4096 times: in float16 the sum stops at 256, where 0.1 is less
  // than half a unit in the last place (256's ulp is 0.25); tinytorch's sum accumulates in float32.
  tt::Half acc(0.0f);
  const float tenth = tt::Half(0.1f);
  for (int i = 0; i < 4096; ++i) acc = tt::Half(static_cast<float>(acc) + tenth);
  const tt::Tensor tenths = tt::full({4096}, 0.1, tt::kFloat16);
  std::printf("\n4096 x float16(0.1) = %.4f: summed in float16 %.1f, by tinytorch's sum (float32 accumulator) "
              "%.1f\n\n",
              4096.0 * tenth, static_cast<double>(static_cast<float>(acc)), tenths.sum().item<double>());
}

void part1() {
  std::printf("Part 1: gradients cast to float16, without and with a loss scale of 2^16\n");
  std::printf("%10s | %14s %9s | %14s %9s\n", "gradient", "float16(g)", "rel err", "float16(g S)/S", "rel err");
  const std::vector<double> g = {1e-5, 1e-6, 1e-7, 5e-8, 1e-8, 1e-9};
  const tt::Tensor g32 = tt::tensor(g);
  const std::vector<double> plain = g32.to(tt::kFloat16).to(tt::kFloat32).tolist<double>();
  const std::vector<double> scaled = (g32 * 65536.0).to(tt::kFloat16).to(tt::kFloat32).div(65536.0).tolist<double>();
  const std::vector<double> exact = g32.tolist<double>();  // g as float32, the master copy's view of it
  for (size_t i = 0; i < g.size(); ++i) {
    auto rel = [&](double v) { return std::abs(v - exact[i]) / exact[i]; };
    std::printf("%10.0e | %14.4e %8.2f%% | %14.4e %8.3f%%%s\n", g[i], plain[i], 100 * rel(plain[i]), scaled[i],
                100 * rel(scaled[i]), plain[i] == 0 ? "   <- flushed to 0 without the scale" : "");
  }
  std::printf("float16: smallest subnormal 2^-24 = %.4g, smallest normal 2^-14 = %.4g, largest 65504\n\n",
              std::ldexp(1.0, -24), std::ldexp(1.0, -14));
}

enum class Mode { Float32, Fp16NoScaler, Fp16Scaler };

/// Loss before each step of SGD on mse(X w, t), in `mode`; *zero_share: at the last step, the share
/// of the elements of dL/dy (times the scale, with the scaler) that are 0 in float16, as the
/// float16 backward gets them.
std::vector<double> train(Mode mode, const tt::Tensor& X, const tt::Tensor& t, int steps, double lr,
                          double* zero_share) {
  tt::Tensor w = tt::zeros({X.sizes()[1], 1}).requires_grad_();
  tt::optim::SGD opt({w}, lr);
  tt::amp::GradScaler scaler;
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    tt::Tensor loss;
    {
      std::optional<tt::autocast> ac;
      if (mode != Mode::Float32) ac.emplace("cpu", tt::kFloat16);
      const tt::Tensor y = tt::matmul(X, w);  // float16 under autocast
      loss = tt::mse_loss(y, t);              // float32 under autocast (its list)
      if (step == steps - 1) {
        tt::NoGradGuard ng;
        const double S = mode == Mode::Fp16Scaler ? scaler.get_scale() : 1.0;
        const tt::Tensor dy = (y.to(tt::kFloat32) - t) * (2.0 * S / static_cast<double>(t.numel()));
        *zero_share = (dy.to(tt::kFloat16) == 0.0).to(tt::kFloat32).mean().item<double>();
      }
    }
    losses.push_back(loss.item<double>());
    if (mode == Mode::Fp16Scaler) {
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
    } else {
      loss.backward();
      opt.step();
    }
  }
  return losses;
}

void part2(int rows, int steps) {
  std::printf("Part 2: y = X w, mse over %d rows, SGD lr 0.25, %d steps (loss before each step)\n", rows, steps);
  tt::manual_seed(0);
  const tt::Tensor X = tt::randn({rows, 16});
  const tt::Tensor t = tt::matmul(X, tt::randn({16, 1}) * 0.01);  // |y| about 0.04
  double z32 = 0, z16 = 0, zs = 0;  // z32 is not printed: float32 gradients are not cast
  const auto f32 = train(Mode::Float32, X, t, steps, 0.25, &z32);
  const auto f16 = train(Mode::Fp16NoScaler, X, t, steps, 0.25, &z16);
  const auto scl = train(Mode::Fp16Scaler, X, t, steps, 0.25, &zs);
  std::printf("%5s | %12s | %16s | %16s\n", "step", "float32", "float16 no scaler", "float16 + scaler");
  int last = -1;  // the last step printed: the final step's row follows unless it was just printed
  for (int s = 0; s < steps; s += (s < 10 ? 2 : 5)) {
    std::printf("%5d | %12.4e | %16.4e | %16.4e\n", s, f32[s], f16[s], scl[s]);
    last = s;
  }
  if (last != steps - 1)
    std::printf("%5d | %12.4e | %16.4e | %16.4e\n", steps - 1, f32.back(), f16.back(), scl.back());
  std::printf("elements of dL/dy that are 0 in float16 at the last step: %.2f%% without a scaler, %.2f%% with "
              "one (dL/dy x S)\n",
              100 * z16, 100 * zs);
  std::printf("final loss: float16 without a scaler %.3gx float16 with one\n", f16.back() / scl.back());
}
}  // namespace

int main(int argc, char** argv) {
  int rows = 65536, steps = 30;
  CLI::App app{"Why float16 gradients need loss scaling: the book's lab (chapters/11-mixed-precision.md)"};
  app.add_option("--rows", rows, "rows of the regression (default 65536; dL/dy = 2 (y - t) / rows)")
      ->check(flags::integer_in(16, 1 << 22));
  app.add_option("--steps", steps, "SGD steps per run (default 30)")->check(flags::integer_in(1, 100000));
  CLI11_PARSE(app, argc, argv);
  formats();
  part1();
  part2(rows, steps);
  return 0;
}
