// examples/train_mnist.cpp — the main job: an MLP (or, with --model cnn, a small CNN) on
// Fashion-MNIST, in one process or with DistributedDataParallel over N processes.
//
// Model (--model mlp, the default): 784 -> 256 -> 128 -> 10 (ReLU between; --hidden changes the
//       middle), CrossEntropyLoss.
// --model cnn: images as (B, 1, 28, 28) through Conv2d(1, 8, 3, padding=1) - ReLU - MaxPool2d(2)
//       - Conv2d(8, 16, 3, padding=1) - ReLU - MaxPool2d(2) - Flatten - Linear(16*7*7, 10)
//       (LeNet-like; --hidden is ignored), same loss and recipe. PyTorch trains the same net with
//       the same recipe in tests/reference/gen_cnn_mnist.py (its accuracies are recorded there and
//       in tests/reference/cnn_mnist_ref.cmake, which the ctest train_mnist_cnn_limit compares with).
// Data: Fashion-MNIST IDX files (Debian's dataset-fashion-mnist), images scaled to [0, 1] and
//       normalised with mean 0.2860, std 0.3530: x' = (x - 0.2860) / 0.3530.
// Recipe (defaults): batch 64, SGD(lr=0.02, momentum=0.9), CosineAnnealingLR over all
//       iterations (stepped every batch), 10 epochs. PyTorch reaches 0.8940-0.8979 test accuracy
//       with this recipe (seeds 0-2: tests/reference/gen_cnn_mnist.py --model mlp); the
//       Fashion-MNIST benchmark's MLP 256-128-100 has 0.8833.
// Output: a progress line while an epoch runs (live on a terminal, periodic lines otherwise), one
//       summary line per epoch, and last `test_accuracy=0.xxxx`.
//   build/bin/train_mnist                         # the full run (about a minute per epoch or less)
//   build/bin/train_mnist --epochs 1 --limit 6000 # a quick look
//   build/bin/train_mnist --device cuda           # on cuda:0 (one process; not with --dp)
//   mpirun -np N build/bin/train_mnist --device cuda --backend nccl
//                         # DDP, one GPU per local rank (cuda:<local rank>), buckets all-reduced by NCCL
//                         # on the GPUs; --backend mpi (the default) stages them through host memory
//                         # (built by nvcc as build/bin/train_mnist_cuda; with -np 1 DDP still goes
//                         # through its NCCL buckets: the one-GPU check of scripts/gpu_check.sh)
//   build/bin/train_mnist_sim --device cuda --max-steps 5 --limit 320
//                         # the kernel simulator (no GPU): 5 steps, each loss printed ("step k: loss=...");
//                         # ctest train_mnist_sim_cuda_steps checks they equal the CPU run's to 1e-5
//
// Under mpirun (scripts/mpirun.sh -np N build/bin/train_mnist) the same binary trains with
// DistributedDataParallel on N ranks:
//   * data: DistributedSampler(60000, N, rank, shuffle, seed) gives each rank ceil(60000/N)
//     indices per epoch (set_epoch reshuffles), so an iteration sees a global batch of
//     N x --batch-size samples and an epoch has N times fewer iterations;
//   * linear scaling rule (Goyal et al. 2017): with N times the batch, N times the lr:
//     lr = --lr x N unless --no-scale-lr (printed);
//   * --warmup-epochs K: LinearLR from lr x F (F = --warmup-start-factor, default 1/N when the lr
//     was scaled, i.e. from the single-process lr, else 0.1) up to lr over K epochs, chained with
//     the cosine over the remaining epochs by SequentialLR; stepped every iteration;
//   * evaluation: rank r scores its contiguous slice of the 10000 test images (no padding, so no
//     image twice) and the correct/total counts are all-reduced;
//   * rank 0 alone prints: the epoch lines, with the training loss/accuracy summed over all ranks,
//     samples/s of the whole job and per rank, world_size=N; the same test_accuracy= last line.
// Without mpirun (world size 1) it is the single-process run: same loader, same numbers.
// --dp N (one process, not under mpirun): nn::DataParallel over N CPU replicas; every batch is
//   split into N chunks run in N threads and the replicas' gradients are summed into the one
//   model, so the numbers are the single-process run's up to rounding (chapters/05-data-parallel.md).
// --trace PREFIX: every rank writes PREFIX.rank{r}.json, a Chrome trace (chrome://tracing,
//   ui.perfetto.dev) of forward, backward, optimizer step, evaluation on the main thread and
//   each bucket's all-reduce on DDP's communication thread, written atomically (tmp + rename).
// --save PATH: at the end of every epoch, rank 0 writes a checkpoint to PATH with tinytorch::save
//   (atomically: a crash leaves the previous epoch's file) and every rank waits at a barrier
//   (chapter 06, "Checkpoints"). It holds everything a resumed run needs to continue exactly:
//     model.<name>        the model's state_dict (model.0.weight, model.0.bias, ...)
//     optimizer.<key>     the optimizer's state_dict (momentum buffers, each group's lr, ...)
//     scheduler.<key>     the LR scheduler's state_dict (last_epoch, ...)
//     epoch               epochs completed; epochs, iterations_per_epoch, world_size: the run's
//                         shape, checked on resume (0-d int64)
//     generator.default   the default generator's state, generator.loader the shuffling
//                         generator's (one process; under DDP DistributedSampler reseeds from
//                         seed + epoch): Generator::get_state() words in an int64 tensor
//   (PyTorch's usual checkpoint dict {'model': ..., 'optimizer': ..., 'epoch': ...}, flattened).
//   Two runs that trained the same weights write byte-identical files (tests/mpi/multihost_test.sh
//   compares one host with several).
// --resume PATH: load such a checkpoint (every rank reads it) and continue with the next epoch;
//   with the same flags the remaining epochs print the same numbers, bit for bit, as the run that
//   was never interrupted (ctest train_mnist_resume, tests/examples/check_resume.sh).
// --stop-after K: stop after epoch K of the --epochs schedule (an interrupted job, for --resume).
// --threads N: threads for the matrix products (core/parallel.hpp; default OMP_NUM_THREADS, else
//   this process's CPUs divided among the ranks on this machine); printed as "threads: N".
// --num-workers N: DataLoader worker threads that build the next batches while the step runs
//   (chapters/04-data-pipeline.md); the same batches as without, so the same numbers.
// --timeout SECONDS: how long any collective may wait for the other ranks before the watchdog
//   reports it and ends the job (default: TINYTORCH_DIST_TIMEOUT, else 30 minutes as PyTorch).
// Under mpirun the ranks first check that the flags that must match (--model, --epochs, --batch-size,
//   --limit, --lr, --momentum, --hidden, --seed, --no-scale-lr, --warmup-*, --trace, --dp,
//   --stop-after, --zero, --amp, --comm-hook, whether --save and --resume are given) are the same on every rank; if not,
//   every rank exits with a message naming each flag that differs.
// --zero 1: ZeRO stage 1 (distributed::ZeroRedundancyOptimizer): each rank keeps the momentum
//   buffers of its shard of the parameters only and broadcasts its updated shard after the step;
//   the same numbers as without, bit for bit. Prints each rank's optimizer-state bytes. A
//   checkpoint (--save) first gathers the shards on rank 0 (consolidate_state_dict), so the file
//   is the one the run without --zero writes.
// --zero 2 / --zero 3: ZeRO stage 2 / 3 (distributed::FullyShardedDataParallel, SHARD_GRAD_OP /
//   FULL_SHARD with a unit per Linear, transformer_auto_wrap_policy) instead of DDP: each rank
//   keeps its shard of the flat parameters, their gradients and momentum buffers (stage 3 frees
//   the full parameters outside each unit's forward and backward); the same numbers as without,
//   bit for bit on 2 ranks. Evaluation runs after fsdp.summon_full_params(); --amp fp16 scales
//   the loss with dist::ShardedGradScaler (the inf check spans the ranks' shards). Not with --save
//   or --resume (the optimizer's shards have no consolidated state dict yet), --comm-hook, --dp or
//   --device cuda.
// --amp bf16|fp16: mixed precision (chapter 11): the forward and the loss run under
//   tt::autocast (the matrix products in bfloat16/float16, the loss in float32) while the
//   parameters, their gradients and the optimizer stay float32 (the master weights). fp16 also
//   scales the loss with amp::GradScaler (a step whose gradients overflowed is skipped, on every
//   rank alike: DDP's all-reduce spreads an inf); bf16, with float32's range, needs no scaler (as
//   PyTorch's recipes). The scaler's state is saved as scaler.<key> (0-d float64) with --save.
// --comm-hook fp16|bf16 (under mpirun): DDP all-reduces its buckets in float16 / bfloat16
//   (dist::default_hooks::fp16_compress_hook / bf16_compress_hook: half the bytes on the wire; the
//   float32 gradients are rounded to 16 bits, divided by N there, summed, and cast back). An error
//   at world size 1 and with --dp, where there is no all-reduce to compress.
// Chapters: chapters/01-training-loop.md, 03-optimizers.md (--save/--resume), 05-data-parallel.md,
// 06-distributed-data-parallel.md, 08-large-batch.md, 13-sharding.md (--zero).
// Reference: PyTorch's DDP tutorial (DistributedSampler + DDP); Goyal et al., "Accurate, Large
// Minibatch SGD: Training ImageNet in 1 Hour" (2017): linear scaling rule, gradual warmup.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <optional>
#include <string>
#include <tinytorch/distributed.hpp>
#include <tinytorch/tinytorch.hpp>
#include <vector>

#include "device_flag.hpp"
#include "flags.hpp"

namespace tt = tinytorch;
namespace dist = tinytorch::distributed;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string data_dir;
  int epochs = 10;
  int64_t batch_size = 64;
  double lr = 0.02;
  double momentum = 0.9;
  std::vector<int64_t> hidden{256, 128};
  std::string model = "mlp";  // "mlp" or "cnn"
  uint64_t seed = 0;
  int threads = 0;  // 0: OMP_NUM_THREADS, else the CPUs (shared among the ranks on one machine)
  int num_workers = 0;  // DataLoader worker threads (chapter 04)
  int64_t limit = 0;  // 0: all training images
  bool no_scale_lr = false;
  int warmup_epochs = 0;
  double warmup_start_factor = 0;  // 0: the default described above
  std::string trace;
  std::string save;  // non-empty: rank 0 saves a checkpoint there at the end of every epoch
  std::string resume;  // non-empty: continue from this checkpoint
  int stop_after = 0;  // > 0: stop after this epoch
  int dp = 0;  // > 0: DataParallel over that many CPU replicas
  double timeout = 0;  // seconds; 0: TINYTORCH_DIST_TIMEOUT or the default 30 minutes
  std::string device = "cpu";  // --device: cpu, cuda (= cuda:0; under mpirun cuda:<local rank>) or cuda:N
  std::string backend = "mpi";  // --backend: mpi, or nccl (CUDA tensors, an nvcc build with NCCL)
  int64_t max_steps = 0;  // > 0: train this many iterations, print each one's loss, then stop (no evaluation)
  int zero = 0;  // --zero 1: ZeroRedundancyOptimizer (ZeRO stage 1)
  std::string amp;  // --amp bf16|fp16: autocast (and GradScaler for fp16); "" off
  std::string comm_hook;  // --comm-hook fp16|bf16: DDP's compression hook; "" none
};

/// The flags every rank must agree on (all but --data-dir, --threads and --timeout, which may
/// differ per host, and --save's path, which only rank 0 uses), as text for
/// dist::check_same_across_ranks.
std::vector<std::pair<std::string, std::string>> flags_that_must_match(const Config& c) {
  std::string hidden;
  for (int64_t h : c.hidden) hidden += (hidden.empty() ? "" : ",") + std::to_string(h);
  const auto real = [](double v) {  // the shortest text that reads back as v: 0.1, not 0.10000000000000001
    char b[64];
    for (int digits = 6; digits <= 17; ++digits) {
      std::snprintf(b, sizeof b, "%.*g", digits, v);
      if (std::strtod(b, nullptr) == v) break;
    }
    return std::string(b);
  };
  return {{"--model", c.model},
          {"--epochs", std::to_string(c.epochs)},
          {"--batch-size", std::to_string(c.batch_size)},
          {"--limit", c.limit == 0 ? "(all)" : std::to_string(c.limit)},
          {"--lr", real(c.lr)},
          {"--momentum", real(c.momentum)},
          {"--hidden", hidden},
          {"--seed", std::to_string(c.seed)},
          {"--backend", c.backend},
          {"--no-scale-lr", c.no_scale_lr ? "on" : "off"},
          {"--warmup-epochs", std::to_string(c.warmup_epochs)},
          {"--warmup-start-factor", real(c.warmup_start_factor)},
          {"--trace", c.trace.empty() ? "(off)" : c.trace},
          {"--save", c.save.empty() ? "(off)" : "(on)"},  // rank 0 writes, every rank waits: on or off everywhere
          {"--resume", c.resume.empty() ? "(off)" : "(on)"},
          {"--stop-after", std::to_string(c.stop_after)},
          {"--dp", std::to_string(c.dp)},
          {"--zero", std::to_string(c.zero)},
          {"--amp", c.amp.empty() ? "(off)" : c.amp},
          {"--comm-hook", c.comm_hook.empty() ? "(none)" : c.comm_hook}};
}

constexpr double kMean = 0.2860, kStd = 0.3530;  // Fashion-MNIST training-set pixel statistics

/// 784 -> hidden[0] -> ... -> 10 with ReLU between the Linear layers.
std::shared_ptr<tt::nn::Sequential> make_mlp(const std::vector<int64_t>& hidden) {
  auto model = std::make_shared<tt::nn::Sequential>();
  int64_t in = 784;
  for (int64_t h : hidden) {
    model->push_back(std::make_shared<tt::nn::Linear>(in, h));
    model->push_back(std::make_shared<tt::nn::ReLU>());
    in = h;
  }
  model->push_back(std::make_shared<tt::nn::Linear>(in, 10));
  return model;
}

/// The LeNet-like CNN of --model cnn, for (B, 1, 28, 28) images:
///   (B,1,28,28) -conv-> (B,8,28,28) -pool-> (B,8,14,14) -conv-> (B,16,14,14) -pool-> (B,16,7,7)
///   -flatten-> (B,784) -linear-> (B,10).  9,098 parameters (the default MLP has 235,146).
std::shared_ptr<tt::nn::Sequential> make_cnn() {
  return std::make_shared<tt::nn::Sequential>(
      std::make_shared<tt::nn::Conv2d>(1, 8, 3, 1, 1), std::make_shared<tt::nn::ReLU>(),
      std::make_shared<tt::nn::MaxPool2d>(2), std::make_shared<tt::nn::Conv2d>(8, 16, 3, 1, 1),
      std::make_shared<tt::nn::ReLU>(), std::make_shared<tt::nn::MaxPool2d>(2), std::make_shared<tt::nn::Flatten>(),
      std::make_shared<tt::nn::Linear>(16 * 7 * 7, 10));
}

/// Number of correct predictions of `model` on (x, y), in batches of 1000, without autograd.
int64_t count_correct(tt::nn::Module& model, const tt::Tensor& x, const tt::Tensor& y) {
  tt::NoGradGuard no_grad;
  int64_t correct = 0;
  for (int64_t start = 0; start < x.size(0); start += 1000) {
    int64_t n = std::min<int64_t>(1000, x.size(0) - start);
    tt::Tensor pred = model.forward(x.narrow(0, start, n)).argmax(1);  // (n)
    correct += pred.eq(y.narrow(0, start, n)).sum().item<int64_t>();
  }
  return correct;
}

using StateDict = std::vector<std::pair<std::string, tt::Tensor>>;

/// The entries of `sd` whose key starts with `prefix`, without it ("model.0.weight" -> "0.weight").
StateDict with_prefix(const StateDict& sd, const std::string& prefix) {
  StateDict out;
  for (const auto& [key, t] : sd)
    if (key.compare(0, prefix.size(), prefix) == 0) out.emplace_back(key.substr(prefix.size()), t);
  return out;
}
void append_prefixed(StateDict& out, const std::string& prefix, const StateDict& sd) {
  for (const auto& [key, t] : sd) out.emplace_back(prefix + key, t);
}
/// The value of the 0-d entry `key` of a checkpoint; throws naming the file if it is missing.
int64_t checkpoint_int(const StateDict& sd, const std::string& key, const std::string& path) {
  for (const auto& [k, t] : sd)
    if (k == key) {
      TT_CHECK(t.numel() == 1 && t.dtype() == tt::kInt64, "--resume: '", path, "': ", key, " is not an integer");
      return t.item<int64_t>();
    }
  TT_CHECK(false, "--resume: '", path, "' has no entry '", key, "' (not a train_mnist checkpoint?)");
  return 0;
}
/// A Generator's state (Generator::get_state()) as an int64 tensor, and back.
tt::Tensor generator_state(const tt::Generator& g) {
  const std::vector<uint64_t> words = g.get_state();
  tt::Tensor t = tt::empty({static_cast<int64_t>(words.size())}, tt::kInt64);
  std::memcpy(t.data_ptr<int64_t>(), words.data(), words.size() * sizeof(uint64_t));
  return t;
}
void set_generator_state(tt::Generator& g, const StateDict& sd, const std::string& key, const std::string& path) {
  for (const auto& [k, t] : sd)
    if (k == key) {
      TT_CHECK(t.dtype() == tt::kInt64 && t.dim() == 1, "--resume: '", path, "': ", key, " is not a 1-D int64 tensor");
      const tt::Tensor c = t.contiguous();
      std::vector<uint64_t> words(static_cast<size_t>(c.numel()));
      std::memcpy(words.data(), c.data_ptr<int64_t>(), words.size() * sizeof(uint64_t));
      g.set_state(words);
      return;
    }
  TT_CHECK(false, "--resume: '", path, "' has no entry '", key, "'");
}

int run(const Config& cfg) {
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const bool distributed = world > 1;
  const bool is_main = rank == 0;
  tt::manual_seed(cfg.seed);
  // Threads for the matrix products: --threads, else core/parallel.hpp's default (OMP_NUM_THREADS,
  // else the CPUs shared among the ranks mpirun started on this machine).
  if (cfg.threads > 0) tt::set_num_threads(cfg.threads);
  if (is_main) std::printf("threads: %d per process (--threads)\n", tt::get_num_threads());
  const std::string dir = tt::data::default_data_dir(cfg.data_dir.empty() ? std::nullopt
                                                                          : std::optional<std::string>(cfg.data_dir));
  tt::data::MNIST train_set(dir, true), test_set(dir, false);
  tt::Tensor train_x = train_set.data(), train_y = train_set.targets();
  tt::Tensor test_x = test_set.data(), test_y = test_set.targets();
  if (cfg.limit > 0 && cfg.limit < train_x.size(0)) {
    train_x = train_x.narrow(0, 0, cfg.limit).contiguous();
    train_y = train_y.narrow(0, 0, cfg.limit).contiguous();
  }
  train_x = (train_x - kMean) / kStd;  // (N, 784)
  test_x = (test_x - kMean) / kStd;
  const bool cnn = cfg.model == "cnn";
  if (cnn) {  // the CNN sees images: (N, 1, 28, 28)
    train_x = train_x.view({-1, 1, 28, 28});
    test_x = test_x.view({-1, 1, 28, 28});
  }

  // Data: one process shuffles everything; N ranks each take a DistributedSampler shard.
  auto train_data = std::make_shared<tt::data::TensorDataset>(train_x, train_y);
  tt::Generator loader_generator(cfg.seed);  // shuffles the single-process loader (outlives it)
  tt::data::DataLoaderOptions opts;
  opts.batch_size = cfg.batch_size;
  std::shared_ptr<tt::data::DistributedSampler> sampler;
  if (distributed) {
    sampler = std::make_shared<tt::data::DistributedSampler>(*train_data, world, rank, /*shuffle=*/true, cfg.seed);
    opts.sampler = sampler;
  } else {
    opts.shuffle = true;
    opts.generator = &loader_generator;  // = opts.seed = cfg.seed, with a state we can checkpoint
  }
  opts.num_workers = cfg.num_workers;
  tt::data::DataLoader loader(train_data, opts);
  const int64_t iters_per_epoch = static_cast<int64_t>(loader.size());

  // --resume: the checkpoint must come from a run of the same shape (same schedule, same shards).
  StateDict checkpoint;
  int start_epoch = 1;
  if (!cfg.resume.empty()) {
    checkpoint = tt::load(cfg.resume);
    const int64_t done = checkpoint_int(checkpoint, "epoch", cfg.resume);
    const int64_t epochs = checkpoint_int(checkpoint, "epochs", cfg.resume);
    const int64_t iters = checkpoint_int(checkpoint, "iterations_per_epoch", cfg.resume);
    const int64_t ranks = checkpoint_int(checkpoint, "world_size", cfg.resume);
    TT_CHECK(epochs == cfg.epochs, "--resume: '", cfg.resume, "' was written by a run with --epochs ", epochs,
             ", this run has --epochs ", cfg.epochs, " (the learning-rate schedule would differ)");
    TT_CHECK(ranks == world, "--resume: '", cfg.resume, "' was written by a run on ", ranks,
             " rank(s), this run has ", world);
    TT_CHECK(iters == iters_per_epoch, "--resume: '", cfg.resume, "' was written by a run with ", iters,
             " iterations per epoch, this run has ", iters_per_epoch, " (--batch-size or --limit differ)");
    TT_CHECK(done >= 1 && done < cfg.epochs, "--resume: '", cfg.resume, "' is at epoch ", done, " of ", cfg.epochs,
             ": nothing left to train");
    start_epoch = static_cast<int>(done) + 1;
  }

  // This rank's slice of the test set, without padding: [rank * T / N, (rank + 1) * T / N).
  const int64_t T = test_x.size(0);
  const int64_t t_lo = T * rank / world, t_hi = T * (rank + 1) / world;
  tt::Tensor my_test_x = test_x.narrow(0, t_lo, t_hi - t_lo), my_test_y = test_y.narrow(0, t_lo, t_hi - t_lo);

  // Model: same initial weights on every rank anyway (same seed); DDP broadcasts rank 0's.
  // `net` is what trains: DDP (also at world size 1), or DataParallel with --dp.
  TT_CHECK(cfg.dp == 0 || !distributed, "--dp ", cfg.dp, " runs DataParallel inside one process and "
           "cannot be combined with mpirun (world size ", world, "); use one or the other");
  std::shared_ptr<dist::Trace> trace;
  if (!cfg.trace.empty()) trace = std::make_shared<dist::Trace>(rank, dist::common_origin_us());
  auto model = cnn ? make_cnn() : make_mlp(cfg.hidden);
  if (!checkpoint.empty()) model->load_state_dict(with_prefix(checkpoint, "model."));
  // --device: move the model before building the optimizer (its state is made on the parameters'
  // device); batches are moved in the loop. Under mpirun, --device cuda means one GPU per local
  // rank, cuda:<local rank> (torchrun's LOCAL_RANK; ours from MPI_Comm_split_type, process_group.hpp),
  // and DDP keeps its buckets there (all-reduced by NCCL with --backend nccl, else staged through
  // host memory for MPI). --dp runs CPU replicas only.
  tt::Device device = examples::parse_device(cfg.device);
  if (distributed && cfg.device == "cuda") device = tt::Device::cuda(dist::get_local_rank());
  TT_CHECK(!distributed || device.is_cpu() || device.index == dist::get_local_rank(), "--device ",
           cfg.device, " on rank ", rank, ": under mpirun each rank uses the GPU of its local rank (cuda:",
           dist::get_local_rank(), "); pass --device cuda");
  TT_CHECK(device.is_cpu() || cfg.dp == 0, "--device ", cfg.device,
           " cannot be combined with --dp (DataParallel over CPU replicas)");
  TT_CHECK(cfg.backend != "nccl" || device.is_cuda(), "--backend nccl moves CUDA tensors only; pass "
           "--device cuda (or use --backend mpi for the CPU)");
  // Conv2d / MaxPool2d have no CUDA kernels yet (ops/dispatch.hpp: conv, pooling): refuse up front.
  TT_CHECK(device.is_cpu() || !cnn, "--model cnn on ", cfg.device,
           ": Conv2d and MaxPool2d have no CUDA kernels yet; use --model mlp");
  if (is_main && device.is_cuda()) std::printf("%s\n", examples::describe_device(device).c_str());
  model->to(device);
  // --comm-hook changes how DDP reduces its buckets: with nothing to reduce it would do nothing.
  TT_CHECK(cfg.comm_hook.empty() || (distributed && cfg.dp == 0), "--comm-hook ", cfg.comm_hook,
           " compresses DDP's all-reduces and needs mpirun with at least 2 ranks (world size here: ", world,
           cfg.dp > 0 ? "; not with --dp" : "", "), e.g. scripts/mpirun.sh -np 2 build/bin/train_mnist --comm-hook ",
           cfg.comm_hook);
  std::shared_ptr<tt::nn::Module> net;
  std::shared_ptr<dist::FullyShardedDataParallel> fsdp;  // --zero 2 and 3
  TT_CHECK(cfg.zero < 2 || (cfg.save.empty() && cfg.resume.empty()), "--zero ", cfg.zero, " (FullyShardedDataParallel) "
           "cannot --save or --resume yet: the optimizer's shards have no consolidated state dict (use --zero 1)");
  TT_CHECK(cfg.zero < 2 || cfg.comm_hook.empty(), "--zero ", cfg.zero, " (FullyShardedDataParallel) cannot be combined "
           "with --comm-hook (a DDP communication hook)");
  if (cfg.zero >= 2 && cfg.dp == 0) {
    dist::FSDPOptions fo;  // FULL_SHARD, PyTorch's default
    if (cfg.zero == 2) fo.sharding_strategy = dist::ShardingStrategy::SHARD_GRAD_OP;
    else fo.auto_wrap_policy = dist::transformer_auto_wrap_policy<tt::nn::Linear>();
    fsdp = std::make_shared<dist::FullyShardedDataParallel>(model, fo);
    net = fsdp;
  } else if (cfg.dp > 0) {
    net = std::make_shared<tt::nn::DataParallel>(model, std::vector<tt::Device>(cfg.dp, tt::Device::cpu()));
  } else {
    dist::DDPOptions ddp_options;
    ddp_options.trace = trace;
    // --backend nccl at world size 1 (`mpirun -np 1 ... --backend nccl`, as `torchrun
    // --nproc_per_node 1`): PyTorch's DDP still all-reduces its buckets then, so ours does too
    // (copy in, ncclAllReduce on the GPU, copy out). It is the one-GPU check of the NCCL bucket path
    // (scripts/gpu_check.sh); with --backend mpi world size 1 skips the buckets (nothing to average).
    ddp_options.force_bucket_path_single_rank = cfg.backend == "nccl";
    auto ddp = std::make_shared<dist::DistributedDataParallel>(model, ddp_options);
    if (cfg.comm_hook == "fp16") ddp->register_comm_hook(nullptr, dist::default_hooks::fp16_compress_hook);
    if (cfg.comm_hook == "bf16") ddp->register_comm_hook(nullptr, dist::default_hooks::bf16_compress_hook);
    if (is_main && !cfg.comm_hook.empty())
      std::printf("DDP communication hook: %s_compress_hook (gradients all-reduced in %s)\n", cfg.comm_hook.c_str(),
                  cfg.comm_hook == "fp16" ? "float16" : "bfloat16");
    net = ddp;
  }

  // Linear scaling rule: N times the batch, N times the lr.
  const double scale = (distributed && !cfg.no_scale_lr) ? static_cast<double>(world) : 1.0;
  const double lr = cfg.lr * scale;
  // --zero 1: ZeroRedundancyOptimizer<SGD> is an SGD (derived), so everything below uses it alike.
  TT_CHECK(cfg.zero == 0 || cfg.dp == 0, "--zero shards the optimizer over mpirun's ranks and cannot "
           "be combined with --dp");
  std::unique_ptr<tt::optim::SGD> optimizer_ptr;
  if (cfg.zero == 1)
    optimizer_ptr = std::make_unique<dist::ZeroRedundancyOptimizer<tt::optim::SGD>>(
        net->parameters(), tt::optim::SGDOptions{lr, cfg.momentum});
  else
    optimizer_ptr = std::make_unique<tt::optim::SGD>(net->parameters(), lr, cfg.momentum);
  tt::optim::SGD& optimizer = *optimizer_ptr;
  const int64_t total_iters = cfg.epochs * iters_per_epoch;
  std::unique_ptr<tt::optim::lr_scheduler::LRScheduler> scheduler;
  std::string schedule_text;
  if (cfg.warmup_epochs > 0) {
    const int64_t warm = std::min<int64_t>(cfg.warmup_epochs, cfg.epochs) * iters_per_epoch;
    const double f = cfg.warmup_start_factor > 0 ? cfg.warmup_start_factor : (scale > 1 ? 1.0 / scale : 0.1);
    auto warmup = std::make_shared<tt::optim::lr_scheduler::LinearLR>(optimizer, f, 1.0, warm);
    auto cosine = std::make_shared<tt::optim::lr_scheduler::CosineAnnealingLR>(
        optimizer, std::max<int64_t>(1, total_iters - warm));
    scheduler = std::make_unique<tt::optim::lr_scheduler::SequentialLR>(
        optimizer, std::vector<std::shared_ptr<tt::optim::lr_scheduler::LRScheduler>>{warmup, cosine},
        std::vector<int64_t>{warm});
    std::ostringstream os;
    os << "schedule: LinearLR warmup " << lr * f << " -> " << lr << " over " << warm << " iterations ("
       << cfg.warmup_epochs << " epoch" << (cfg.warmup_epochs > 1 ? "s" : "") << "), then CosineAnnealingLR over "
       << total_iters - warm << " (SequentialLR, stepped every iteration)";
    schedule_text = os.str();
  } else {
    scheduler = std::make_unique<tt::optim::lr_scheduler::CosineAnnealingLR>(optimizer, total_iters);
  }
  tt::nn::CrossEntropyLoss loss_fn;
  // --amp: autocast's device type and dtype; a GradScaler for fp16 (disabled, a pass-through, else)
  const std::string amp_device = device.is_cpu() ? "cpu" : "cuda";
  const tt::DType amp_dtype = cfg.amp == "fp16" ? tt::kFloat16 : tt::kBFloat16;
  // (--zero 2/3: each rank holds a shard of the gradients, so the inf check spans the ranks:
  // dist::ShardedGradScaler, PyTorch's for FSDP)
  const tt::amp::GradScalerOptions scaler_options{65536.0, 2.0, 0.5, 2000, /*enabled=*/cfg.amp == "fp16"};
  std::unique_ptr<tt::amp::GradScaler> scaler_ptr =
      fsdp ? std::make_unique<dist::ShardedGradScaler>(scaler_options) : std::make_unique<tt::amp::GradScaler>(scaler_options);
  tt::amp::GradScaler& scaler = *scaler_ptr;
  if (!checkpoint.empty()) {
    optimizer.load_state_dict(with_prefix(checkpoint, "optimizer."));
    scheduler->load_state_dict(with_prefix(checkpoint, "scheduler."));
    if (scaler.is_enabled()) {
      std::map<std::string, double> sd;
      for (const auto& [key, t] : with_prefix(checkpoint, "scaler.")) sd[key] = t.item<double>();
      scaler.load_state_dict(sd);  // an empty one (a checkpoint without --amp fp16) is an error
    }
    set_generator_state(tt::default_generator(), checkpoint, "generator.default", cfg.resume);
    if (!distributed) set_generator_state(loader_generator, checkpoint, "generator.loader", cfg.resume);
  }

  // Live progress only on a real terminal: Open MPI hands each rank a pseudo-terminal even when
  // mpirun's own output goes to a pipe or a file, so ranks launched by mpirun print plain lines.
  const bool tty = is_main && isatty(fileno(stdout)) && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr;
  if (is_main) {
    std::printf("train_mnist: %lld training / %lld test images from %s, batch %lld, lr %g, momentum %g, %d epochs\n",
                (long long)train_x.size(0), (long long)test_x.size(0), dir.c_str(), (long long)cfg.batch_size,
                lr, cfg.momentum, cfg.epochs);
    if (distributed) {
      std::printf("world_size=%d: %s, %zu samples per rank per epoch, global batch %d x %lld = %lld, "
                  "%lld iterations per epoch\n",
                  world, fsdp ? "FullyShardedDataParallel" : "DistributedDataParallel", sampler->size(), world, (long long)cfg.batch_size, (long long)(world * cfg.batch_size),
                  (long long)iters_per_epoch);
      if (cfg.no_scale_lr)
        std::printf("lr %g (--no-scale-lr: the linear scaling rule would use %g x %d = %g)\n", cfg.lr, cfg.lr, world,
                    cfg.lr * world);
      else
        std::printf("lr %g x %d ranks = %g (linear scaling rule; --no-scale-lr to keep %g)\n", cfg.lr, world, lr,
                    cfg.lr);
    }
    if (cfg.dp > 0)
      std::printf("DataParallel over %d CPU replicas: each batch of %lld split into chunks of at most %lld\n", cfg.dp,
                  (long long)cfg.batch_size, (long long)((cfg.batch_size + cfg.dp - 1) / cfg.dp));
    if (!schedule_text.empty()) std::printf("%s\n", schedule_text.c_str());
    if (!checkpoint.empty())
      std::printf("resumed: %s after epoch %d of %d\n", cfg.resume.c_str(), start_epoch - 1, cfg.epochs);
    if (cfg.zero == 1)
      std::printf("ZeRO-1: ZeroRedundancyOptimizer over %d rank(s), each steps its shard of the parameters\n", world);
    if (cfg.zero == 2)
      std::printf("ZeRO-2: FullyShardedDataParallel (SHARD_GRAD_OP) over %d rank(s), one flat parameter: each rank "
                  "keeps its shard's gradient and momentum\n", world);
    if (cfg.zero == 3)
      std::printf("ZeRO-3: FullyShardedDataParallel (FULL_SHARD) over %d rank(s), %zu flat parameters (a unit per "
                  "Linear): each rank keeps its shards, their gradients and momentum\n",
                  world, fsdp->parameters().size());
    if (cnn) {  // one line: "model: Conv2d(1, 8, ...) - ReLU() - ... - Linear(...)"
      std::string layers;
      for (const auto& child : model->named_children())
        layers += (layers.empty() ? "" : " - ") + child.second->name() + "(" + child.second->extra_repr() + ")";
      std::printf("model: %s\n", layers.c_str());
    }
    std::fflush(stdout);
  }

  double test_acc = 0;
  for (int epoch = start_epoch; epoch <= cfg.epochs; ++epoch) {
    if (sampler) sampler->set_epoch(epoch - 1);  // a new shard order every epoch, same on every rank
    net->train();
    auto t0 = Clock::now();
    double loss_sum = 0;
    int64_t seen = 0, correct = 0, it = 0;
    for (auto& batch : loader) {
      optimizer.zero_grad();
      tt::Tensor logits, loss;
      const tt::Tensor target = batch.target.to(device);  // (B) int64
      {
        dist::Trace::Scope s(trace.get(), "forward");
        std::optional<tt::autocast> ac;  // --amp: the forward and the loss only (PyTorch's recipe)
        if (!cfg.amp.empty()) ac.emplace(amp_device, amp_dtype);
        logits = net->forward(batch.data.to(device));  // (B, 10)
        loss = loss_fn(logits, target);                // scalar (float32 under autocast too)
      }
      {
        dist::Trace::Scope s(trace.get(), "backward");
        scaler.scale(loss).backward();  // with N > 1: returns with gradients averaged over the ranks
      }
      {
        dist::Trace::Scope s(trace.get(), "optimizer step");
        scaler.step(optimizer);  // optimizer.step() unless fp16 gradients overflowed
        scaler.update();
        scheduler->step();
      }

      const int64_t b = batch.data.size(0);
      const double loss_value = loss.item<double>();
      loss_sum += loss_value * static_cast<double>(b);
      correct += logits.argmax(1).eq(target).sum().item<int64_t>();
      seen += b;
      ++it;
      if (cfg.max_steps > 0) {  // --max-steps: every loss, with enough digits to compare devices
        if (is_main) std::printf("step %lld: loss=%.8f\n", (long long)it, loss_value);
        if (it == cfg.max_steps) break;
      }
      const bool report = tty ? (it % 20 == 0) : (it % std::max<int64_t>(1, iters_per_epoch / 4) == 0);
      if (is_main && report && it < iters_per_epoch) {
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        std::printf("%sepoch %d/%d [%lld/%lld] loss=%.4f samples/s=%.0f%s", tty ? "\r" : "", epoch, cfg.epochs,
                    (long long)it, (long long)iters_per_epoch, loss_sum / seen, seen * world / secs,
                    tty ? "" : "\n");
        std::fflush(stdout);
      }
    }
    if (cfg.max_steps > 0) return 0;  // --max-steps: no evaluation, no test_accuracy line
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    // The training statistics of all ranks, and the slowest rank's time.
    double sums[2] = {loss_sum, secs};
    int64_t counts[2] = {correct, seen};
    if (distributed) {
      dist::all_reduce(&sums[0], 1, dist::ReduceOp::SUM);
      dist::all_reduce(&sums[1], 1, dist::ReduceOp::MAX);
      dist::all_reduce(counts, 2, dist::ReduceOp::SUM);
    }
    int64_t eval[2];
    {
      dist::Trace::Scope s(trace.get(), "evaluate");
      net->eval();
      if (fsdp) fsdp->summon_full_params();  // every rank holds the current parameters (a collective, once)
      eval[0] = count_correct(*model, my_test_x.to(device), my_test_y.to(device));  // the wrapped model: no collective
      eval[1] = my_test_x.size(0);
      if (distributed) dist::all_reduce(eval, 2, dist::ReduceOp::SUM);
    }
    test_acc = static_cast<double>(eval[0]) / static_cast<double>(eval[1]);
    if (is_main) {
      const double all_seen = static_cast<double>(counts[1]);
      if (distributed)
        std::printf("%sepoch %d/%d loss=%.4f train_acc=%.4f test_acc=%.4f samples/s=%.0f per_rank_samples/s=%.0f "
                    "world_size=%d time=%.1fs\n",
                    tty ? "\r\033[K" : "", epoch, cfg.epochs, sums[0] / all_seen, counts[0] / all_seen, test_acc,
                    all_seen / sums[1], all_seen / world / sums[1], world, sums[1]);
      else
        std::printf("%sepoch %d/%d loss=%.4f train_acc=%.4f test_acc=%.4f samples/s=%.0f time=%.1fs\n",
                    tty ? "\r\033[K" : "", epoch, cfg.epochs, loss_sum / seen, static_cast<double>(correct) / seen,
                    test_acc, seen / secs, secs);
      std::fflush(stdout);
    }
    if (epoch == start_epoch && cfg.zero >= 1) {
      // The optimizer state each rank holds (momentum buffers: 4 bytes per element it updates).
      std::vector<int64_t> bytes(static_cast<size_t>(world));
      const int64_t mine = optimizer.state_nbytes();
      if (distributed) dist::all_gather(bytes.data(), &mine, 1, tt::kInt64);
      else bytes[0] = mine;
      if (is_main) {
        std::string list;
        for (int64_t b : bytes) list += (list.empty() ? "" : ", ") + std::to_string(b);
        std::printf("optimizer state bytes per rank: [%s]\n", list.c_str());
      }
    }
    if (!cfg.save.empty()) {
      // Every rank holds the same weights; with --zero 1 the optimizer state is sharded and first
      // gathered on rank 0 (a collective). Rank 0 writes, the others wait until the file is
      // complete (a later --resume on any rank reads a whole file).
      if (cfg.zero == 1) static_cast<dist::ZeroRedundancyOptimizer<tt::optim::SGD>&>(optimizer).consolidate_state_dict(0);
      if (is_main) {
        StateDict ck;
        append_prefixed(ck, "model.", model->state_dict());
        append_prefixed(ck, "optimizer.", optimizer.state_dict());
        append_prefixed(ck, "scheduler.", scheduler->state_dict());
        for (const auto& [key, v] : scaler.state_dict())  // empty unless --amp fp16
          ck.emplace_back("scaler." + key, tt::scalar_tensor(v, tt::kFloat64));
        const auto int_scalar = [](int64_t v) { return tt::scalar_tensor(static_cast<double>(v), tt::kInt64); };
        ck.emplace_back("epoch", int_scalar(epoch));
        ck.emplace_back("epochs", int_scalar(cfg.epochs));
        ck.emplace_back("iterations_per_epoch", int_scalar(iters_per_epoch));
        ck.emplace_back("world_size", int_scalar(world));
        ck.emplace_back("generator.default", generator_state(tt::default_generator()));
        if (!distributed) ck.emplace_back("generator.loader", generator_state(loader_generator));
        tt::save(ck, cfg.save);
      }
      if (distributed) dist::barrier();
      if (is_main) std::printf("saved: %s (epoch %d)\n", cfg.save.c_str(), epoch);
    }
    if (epoch == cfg.stop_after) break;
  }
  if (trace) {
    const std::string path = cfg.trace + ".rank" + std::to_string(rank) + ".json";
    trace->write(path);
    if (is_main)
      std::printf("trace: %s.rank{0..%d}.json (%zu events on rank 0)\n", cfg.trace.c_str(), world - 1, trace->size());
  }
  if (is_main) std::printf("test_accuracy=%.4f\n", test_acc);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"tinytorch train_mnist: an MLP or a CNN on Fashion-MNIST (one process, or DDP under mpirun)"};
  app.add_option("--data-dir", cfg.data_dir,
                 "directory with the IDX files (default: $TINYTORCH_DATA, else /usr/share/datasets/fashion-mnist)");
  app.add_option("--epochs", cfg.epochs, "training epochs")->check(flags::integer_in(1, 1000000));
  app.add_option("--batch-size", cfg.batch_size, "samples per batch (per rank under mpirun)")
      ->check(flags::integer_in(1, 1000000));
  app.add_option("--lr", cfg.lr, "peak learning rate of one process (cosine-annealed to 0)")
      ->check(flags::real_in(0, flags::kInf, flags::kLowOpen));
  app.add_option("--momentum", cfg.momentum, "SGD momentum")->check(flags::real_in(0, 1, flags::kHighOpen));
  app.add_option("--model", cfg.model, "mlp (784-256-128-10) or cnn (2 x Conv2d-ReLU-MaxPool2d, then Linear)")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--hidden", cfg.hidden, "hidden layer sizes of the MLP, e.g. 256,128 (not used by --model cnn)")
      ->delimiter(',')
      ->check(flags::integer_in(1, 100000));
  app.add_option("--seed", cfg.seed, "seed for initial weights and shuffling")->check(flags::seed());
  app.add_option("--threads", cfg.threads,
                 "threads for the matrix products (default: $OMP_NUM_THREADS, else the CPUs / ranks on this machine)")
      ->check(flags::integer_in(1, 1024));
  app.add_option("--num-workers", cfg.num_workers, "DataLoader worker threads that build batches ahead (default 0)")
      ->check(flags::integer_in(0, 64));
  app.add_option("--limit", cfg.limit, "train on the first N training images only")
      ->check(flags::integer_in(1, 1000000000));
  app.add_flag("--no-scale-lr", cfg.no_scale_lr, "under mpirun -np N: keep --lr instead of N x --lr");
  app.add_option("--warmup-epochs", cfg.warmup_epochs, "LinearLR warmup over the first K epochs, then cosine")
      ->check(flags::integer_in(0, 1000000));
  app.add_option("--warmup-start-factor", cfg.warmup_start_factor,
                 "warmup starts at lr x F (default: 1/N when the lr was scaled by N, else 0.1)")
      ->check(flags::real_in(0, 1));
  app.add_option("--trace", cfg.trace, "write a Chrome trace per rank to PREFIX.rank{r}.json");
  app.add_option("--save", cfg.save,
                 "at the end of every epoch rank 0 saves a checkpoint (model, optimizer, scheduler, epoch, "
                 "generators) to PATH (tinytorch::save)");
  app.add_option("--resume", cfg.resume, "continue from a checkpoint written by --save (same flags)");
  app.add_option("--stop-after", cfg.stop_after, "stop after epoch K of the --epochs schedule (resume with --resume)")
      ->check(flags::integer_in(1, 1000000));
  app.add_option("--dp", cfg.dp, "DataParallel over N CPU replicas in this one process (not with mpirun)")
      ->check(flags::integer_in(1, 64));
  app.add_option("--timeout", cfg.timeout,
                 "seconds a collective may wait for the other ranks before the job is aborted with a report "
                 "(default: $TINYTORCH_DIST_TIMEOUT, else 1800)")
      ->check(flags::real_in(1, 1e9));  // dist::kMinTimeout: below 1 s correct ranks time out
  app.add_option("--device", cfg.device,
                 "where the model trains: cpu, cuda (= cuda:0; under mpirun cuda:<local rank>) or cuda:N")
      ->capture_default_str();
  app.add_option("--backend", cfg.backend,
                 "the process group's backend: mpi, or nccl (with --device cuda; needs a build with nvcc and NCCL)")
      ->check(CLI::IsMember({"mpi", "nccl"}))
      ->capture_default_str();
  app.add_option("--zero", cfg.zero,
                 "1: shard the optimizer state across the ranks (ZeRO stage 1, ZeroRedundancyOptimizer); 2: also "
                 "the gradients (FullyShardedDataParallel SHARD_GRAD_OP); 3: also the parameters (FULL_SHARD, a unit "
                 "per Linear)")
      ->check(flags::integer_in(0, 3));
  app.add_option("--amp", cfg.amp,
                 "mixed precision: bf16 (autocast to bfloat16) or fp16 (autocast to float16 with a GradScaler); "
                 "parameters stay float32")
      ->check(CLI::IsMember({"bf16", "fp16"}));
  app.add_option("--comm-hook", cfg.comm_hook,
                 "under mpirun: DDP all-reduces the gradients in fp16 or bf16 (fp16_compress_hook / "
                 "bf16_compress_hook; parameters and gradients stay float32)")
      ->check(CLI::IsMember({"fp16", "bf16"}));
  app.add_option("--max-steps", cfg.max_steps,
                 "train only this many iterations of the first epoch, printing each loss (no evaluation)")
      ->check(flags::integer_in(1, 1000000000));
  CLI11_PARSE(app, argc, argv);
  std::chrono::milliseconds timeout{0};
  try {
    timeout = cfg.timeout > 0 ? std::chrono::milliseconds(std::max<int64_t>(1, std::llround(cfg.timeout * 1000)))
                              : dist::default_timeout();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mnist: %s\n", e.what());
    return 2;
  }
  const dist::Backend backend = cfg.backend == "nccl" ? dist::Backend::NCCL : dist::Backend::MPI;
  std::optional<dist::ProcessGroupGuard> pg;  // world size 1 without mpirun
  try {
    pg.emplace(backend, timeout);
  } catch (const std::exception& e) {  // e.g. --backend nccl in a build without NCCL
    std::fprintf(stderr, "train_mnist: %s\n", e.what());
    return 2;
  }
  try {
    dist::check_same_across_ranks("train_mnist", flags_that_must_match(cfg));
    return run(cfg);
  } catch (const std::exception& e) {
    if (dist::get_world_size() > 1) pg->abort(e);  // "rank r: ...", then MPI_Abort: nobody hangs
    std::fprintf(stderr, "train_mnist: %s\n", e.what());
    return 1;
  }
}
