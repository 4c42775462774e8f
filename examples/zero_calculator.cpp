// examples/zero_calculator.cpp — memory per rank and bytes sent per rank per step for DDP and the
// three ZeRO stages: the paper's table, for any model size and number of ranks.
//
//   build/bin/zero_calculator                        # the ZeRO paper's Figure 1: 7.5B parameters, 64 GPUs
//   build/bin/zero_calculator --params 7e9 --bytes 4 --optimizer-bytes 8
//                                                    # the book's 7B model in float32 Adam: 112 GB -> 1.75 GB
//   build/bin/zero_calculator --params 235146 --bytes 4 --optimizer-bytes 8 --ranks 2
//                                                    # train_mnist's MLP on 2 ranks (tests/mpi/test_zero.cpp measures it)
//
// P parameters, N ranks; each parameter costs B bytes of value, B bytes of gradient and K bytes of
// optimizer state (mixed-precision Adam: B = 2 (fp16), K = 12 (fp32 master copy, momentum,
// variance); plain float32 Adam: B = 4, K = 8). Per rank (Rajbhandari et al. 2020, Figure 1):
//   DDP                      (B + B + K) P            every rank holds everything
//   ZeRO-1 (P_os)            (B + B) P + K P / N      optimizer state sharded
//   ZeRO-2 (P_os+g)          B P + (B + K) P / N      ... and gradients
//   ZeRO-3 (P_os+g+p)        (B + B + K) P / N        ... and parameters (plus the largest unit gathered)
// Bytes each rank sends per step, with a ring (the gradients are B P bytes):
//   DDP, ZeRO-1, ZeRO-2      2 (N-1)/N B P            all-reduce = reduce-scatter + all-gather
//   ZeRO-3                   3 (N-1)/N B P            all-gather in forward and again in backward, reduce-scatter
// (ZeRO-1 in PyTorch broadcasts the updated parameters instead of all-gathering them: the same
// (N-1)/N B P per rank, in N broadcasts.) GB here is 10^9 bytes, as the paper's.
//
// Chapter: chapters/13-sharding.md. Reference: Rajbhandari et al., "ZeRO: Memory Optimizations
// Toward Training Trillion Parameter Models" (SC 2020), Figure 1 and Section 7; the book's
// "Memory-Efficient DP: ZeRO and FSDP".
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "flags.hpp"
#include "format_bytes.hpp"

int main(int argc, char** argv) {
  double P = 7.5e9, B = 2, K = 12;
  int N = 64;
  CLI::App app{"Memory per rank and bytes sent per rank per step: DDP and ZeRO stages 1-3 "
               "(chapters/13-sharding.md). Defaults: the ZeRO paper's 7.5B-parameter model on 64 GPUs."};
  using flags::real_in, flags::kLowOpen;
  app.add_option("--params", P, "parameters (default 7.5e9)")->check(real_in(0, 1e18, kLowOpen));
  app.add_option("--bytes", B, "bytes per parameter value and per gradient element (2: fp16/bf16, 4: fp32)")
      ->check(real_in(0, 64, kLowOpen));
  app.add_option("--optimizer-bytes", K, "optimizer-state bytes per parameter (K: 12 mixed-precision Adam, 8 fp32 Adam)")
      ->check(real_in(0, 1024));
  app.add_option("--ranks", N, "data-parallel ranks N (default 64)")->check(flags::integer_in(1, 100000000));
  CLI11_PARSE(app, argc, argv);

  const double n = N;
  std::printf("zero_calculator: %.4g parameters, %g bytes per value and per gradient, K = %g optimizer bytes, "
              "%d ranks\n\n",
              P, B, K, N);
  std::printf("%-18s | %-20s %12s %7s | %-14s %12s\n", "", "memory per rank", "", "vs DDP", "sent per rank", "");
  const struct {
    const char* name;
    const char* formula;
    double bytes;
    const char* sent_formula;
    double sent;
  } rows[] = {
      {"DDP", "(2B + K) P", (2 * B + K) * P, "2(N-1)/N B P", 2 * (n - 1) / n * B * P},
      {"ZeRO-1 (P_os)", "2B P + K P/N", 2 * B * P + K * P / n, "2(N-1)/N B P", 2 * (n - 1) / n * B * P},
      {"ZeRO-2 (P_os+g)", "B P + (B + K) P/N", B * P + (B + K) * P / n, "2(N-1)/N B P", 2 * (n - 1) / n * B * P},
      {"ZeRO-3 (P_os+g+p)", "(2B + K) P/N", (2 * B + K) * P / n, "3(N-1)/N B P", 3 * (n - 1) / n * B * P},
  };
  const double ddp = rows[0].bytes;
  for (const auto& r : rows)
    std::printf("%-18s | %-20s %12s %6.2fx | %-14s %12s\n", r.name, r.formula,
                examples::format_bytes(r.bytes, 2).c_str(), r.bytes / ddp, r.sent_formula,
                examples::format_bytes(r.sent, 2).c_str());
  std::printf("\nZeRO-3 also holds the largest gathered unit while it computes (not counted above).\n"
              "PyTorch's ZeroRedundancyOptimizer on DDP (tinytorch's too) all-reduces the whole gradient and then\n"
              "broadcasts each shard: 2(N-1)/N B P + (N-1)/N B P per rank, half as much again as the paper's ZeRO-1.\n");
  return 0;
}
