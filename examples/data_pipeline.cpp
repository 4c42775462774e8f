// examples/data_pipeline.cpp — the data pipeline's utilisation point, measured: how much of an
// epoch the training step waits for data when batches are built in the main thread
// (num_workers=0) or ahead of it by W worker threads (DataLoader's num_workers, prefetch_factor).
//
// Dataset: examples/data_pipeline.hpp's DecodeCostDataset, --samples synthetic samples whose
//   get_batch costs --decode-ms per sample (a stand-in for reading, decoding and augmenting an
//   image). --decode sleep (default) waits without using a CPU, like I/O; --decode spin does a
//   fixed amount of CPU work that takes that long on an idle core (calibrated at start), like
//   JPEG decoding: the workers then compete for the machine's cores, and take longer when the
//   cores are busy.
// Step: the main thread stands in for the accelerator: it spends --compute-ms per batch, asleep
//   by default (an accelerator computes while the host thread waits for it), or with --compute
//   spin keeping a core busy (a CPU training step).
// For every num_workers in --workers, one shuffled epoch (RandomSampler, --seed); one line each:
//   batches/s, samples/s, waiting (the fraction of the epoch the step waited for its batch),
//   utilisation (the fraction it computed), the model's prediction (predicted_epoch_ms: the
//   schedule replayed with the exact costs, pipeline fill included), and the checksum of all
//   batches (the same for every num_workers: the same batches in the same order).
// The model (the book's "Data Prefetching and Pipeline Overlapping"), with t_load = batch x
// decode-ms and t_compute = compute-ms per batch:
//   num_workers = 0:  t_step = t_load + t_compute           utilisation = t_compute / t_step
//   num_workers = W:  t_step = max(t_load / W, t_compute)   utilisation = min(1, W t_compute / t_load)
//   (in steady state; the first batch always costs one whole t_load of waiting).
// The defaults are the book's example: the step could take 1000 samples/s (a batch of 10 in
// 10 ms), one loader delivers 200 samples/s (5 ms per sample): utilisation = R_pipe / R_compute =
// 20% with one worker, 1/6 = 17% without overlap, 100% from 5 workers.
//   build/bin/data_pipeline                        # num_workers 0,1,2,4,5: about 6 s
//   build/bin/data_pipeline --decode spin --workers 0,1,2,4
// Chapter: chapters/04-data-pipeline.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "data_pipeline.hpp"
#include "flags.hpp"

int main(int argc, char** argv) {
  namespace tt = tinytorch;
  CLI::App app{"tinytorch data_pipeline: throughput and utilisation with and without loader threads"};
  int64_t samples = 400, batch_size = 10, prefetch_factor = 0;
  double decode_ms = 5, compute_ms = 10;
  std::vector<int64_t> workers{0, 1, 2, 4, 5};
  std::string decode = "sleep", compute = "sleep";
  uint64_t seed = 0;
  app.add_option("--samples", samples, "samples in the dataset (one epoch)")->check(flags::integer_in(1, 10000000));
  app.add_option("--batch-size", batch_size, "samples per batch")->check(flags::integer_in(1, 1000000));
  app.add_option("--decode-ms", decode_ms, "get_batch's cost per sample, in ms")->check(flags::real_in(0, 10000));
  app.add_option("--decode", decode, "how get_batch spends it: sleep (like I/O) or spin (like CPU decoding)")
      ->check(CLI::IsMember({"sleep", "spin"}));
  app.add_option("--compute-ms", compute_ms, "the training step's time per batch, in ms")
      ->check(flags::real_in(0, 10000));
  app.add_option("--compute", compute, "how the step spends it: sleep (like an accelerator) or spin (a CPU step)")
      ->check(CLI::IsMember({"sleep", "spin"}));
  app.add_option("--workers", workers, "num_workers values to run, e.g. 0,1,2")
      ->delimiter(',')
      ->check(flags::integer_in(0, 256));
  app.add_option("--prefetch-factor", prefetch_factor, "DataLoader prefetch_factor (default: PyTorch's 2)")
      ->check(flags::integer_in(1, 1000));
  app.add_option("--seed", seed, "shuffling seed")->check(flags::seed());
  CLI11_PARSE(app, argc, argv);
  try {
    auto ds = std::make_shared<examples::DecodeCostDataset>(
        samples, decode_ms, decode == "spin" ? examples::Decode::kSpin : examples::Decode::kSleep);
    const double t_load = decode_ms * static_cast<double>(batch_size);
    const size_t batches = tt::data::DataLoader(ds, tt::data::DataLoaderOptions{batch_size}).size();
    std::printf("data_pipeline: %lld samples, batch %lld, %zu batches; get_batch %.3g ms per sample (%s) = %.3g ms per batch; "
                "step %.3g ms per batch (%s)\n",
                static_cast<long long>(samples), static_cast<long long>(batch_size), batches, decode_ms, decode.c_str(), t_load,
                compute_ms, compute.c_str());
    std::vector<double> load_ms;  // each batch's cost; the last one may be short
    for (int64_t lo = 0; lo < samples; lo += batch_size)
      load_ms.push_back(decode_ms * static_cast<double>(std::min(batch_size, samples - lo)));
    if (t_load > 0 && compute_ms > 0)
      std::printf("one loader: R_pipe = %.0f samples/s; the step: R_compute = %.0f samples/s; R_pipe / R_compute = %.1f%%\n",
                  1000.0 * static_cast<double>(batch_size) / t_load, 1000.0 * static_cast<double>(batch_size) / compute_ms,
                  100.0 * compute_ms / t_load);
    std::printf("%11s %10s %10s %8s %12s %10s %s\n", "num_workers", "batches/s", "samples/s", "waiting", "utilisation",
                "predicted", "checksum");
    std::vector<int64_t> first;
    for (int64_t w : workers) {
      tt::data::DataLoaderOptions opts;
      opts.batch_size = batch_size;
      opts.shuffle = true;
      opts.seed = seed;
      opts.num_workers = w;
      if (w > 0 && prefetch_factor > 0) opts.prefetch_factor = prefetch_factor;
      tt::data::DataLoader loader(ds, opts);
      const examples::EpochStats s = examples::run_epoch(
          loader, compute_ms, compute == "spin" ? examples::Decode::kSpin : examples::Decode::kSleep);
      const int64_t window = w * loader.options().prefetch_factor.value_or(0);
      const double epoch_ms = examples::predicted_epoch_ms(load_ms, compute_ms, w, window);
      const double predicted = epoch_ms > 0 ? compute_ms * static_cast<double>(batches) / epoch_ms : 1.0;
      std::printf("%11lld %10.1f %10.1f %7.1f%% %11.1f%% %9.1f%% %lld\n", static_cast<long long>(w),
                  static_cast<double>(s.batches) / s.seconds, static_cast<double>(s.samples) / s.seconds,
                  100.0 * s.waiting(), 100.0 * s.utilisation(), 100.0 * predicted, static_cast<long long>(s.checksum));
      if (first.empty()) first = s.first_batch;
    }
    std::printf("first batch (seed %llu):", static_cast<unsigned long long>(seed));
    for (int64_t i : first) std::printf(" %lld", static_cast<long long>(i));
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "data_pipeline: %s\n", e.what());
    return 1;
  }
  return 0;
}
