// examples/train_gpt.cpp — a character-level GPT on Tiny Shakespeare (nanoGPT's shakespeare_char).
//
// Data: data/tinyshakespeare/input.txt (shipped; 1,115,394 characters), tokenised as nanoGPT's
//       prepare.py: the 65 distinct characters in byte order are the vocabulary; the first 90%
//       train, the last 10% validate. A batch is `--batch-size` windows of `--block-size`
//       characters at random offsets (x) and the same windows shifted by one (y, the targets).
// Model: examples/gpt.hpp (nanoGPT's GPT: token + position embeddings, n_layer pre-norm blocks of
//       causal self-attention and a GELU MLP, the tied output head).
// Recipe (defaults: nanoGPT's CPU settings for shakespeare_char): 4 layers, 4 heads, 128 wide,
//       context 64, batch 12, dropout 0, bias false; AdamW(lr 1e-3, betas (0.9, 0.99), weight
//       decay 0.1 on matrices only), warmup 100 iterations then cosine decay to 1e-4 at
//       --iters, gradient clipping at 1.0, 2000 iterations. nanoGPT reports a validation loss of
//       about 1.88 with these settings.
// Output: "step N: train loss X, val loss Y" every --eval-interval iterations (the mean over
//       --eval-iters random batches of each split) and after the last; "iter N: loss X, time T ms,
//       K tokens/s, G GFLOP/s" every --log-interval (FLOPs as nanoGPT's estimate_mfu counts them:
//       6N + 12 L H Q T per token); last `val_loss=Y`.
//   build/bin/train_gpt                                   # the full run
//   build/bin/train_gpt --iters 100 --eval-interval 50    # a quick look
//   build/bin/train_gpt --save gpt.tt                     # keep the trained model
//   build/bin/train_gpt --sample 500 --resume gpt.tt      # generate 500 characters from it
//   scripts/mpirun.sh -np 2 build/bin/train_gpt --tp 2    # every Block split over 2 ranks (Megatron)
//   scripts/mpirun.sh -np 4 build/bin/train_gpt --dp 2 --tp 2   # ... and DDP over 2 such pairs
//   scripts/mpirun.sh -np 2 build/bin/train_gpt --pp 2 --microbatches 4   # 2 pipeline stages
// Several ranks (mpirun): the world is a DeviceMesh (dp, tp) with tp = --tp and dp = world / tp
// (distributed/device_mesh.hpp). The model is built whole on every rank (the same seed), then
// each Block is split over its tp group (examples/gpt_tp.hpp); with dp > 1 it is wrapped in
// DistributedDataParallel over its dp group. Every rank draws the same batch of --batch-size
// windows and its replica takes rows [d B/dp, (d+1) B/dp), so the run computes what one process
// does on the whole batch: the same losses to about 1e-5 (the printed loss is the replicas' mean).
// Gradient clipping adds the shards' squares over the tp group (clip_grad_norm_tensor_parallel_).
// --pp P --microbatches M (mpirun -np P): the Blocks cut into P stages, one per rank
// (examples/gpt_pp.hpp), each batch run as M micro-batches under --schedule gpipe or 1f1b
// (distributed/pipeline.hpp); the same losses as one process; at the end each stage's busy
// fraction beside the bound M / (M + P - 1). --microbatches M alone is a one-stage pipeline
// (gradient accumulation). --save and --sample are for one process.
// --save PATH writes the model's state_dict, its config and the vocabulary with tinytorch::save
// (atomically) at the end; --sample N --resume PATH prints N characters generated from a newline,
// each drawn from softmax(logits / --temperature) restricted to the --top-k most likely (nanoGPT's
// sample.py: temperature 0.8, top_k 200).
// Chapter: chapters/12-model-parallelism.md. Reference: karpathy/nanoGPT train.py, sample.py,
// data/shakespeare_char/prepare.py, config/train_shakespeare_char.py.
#include <tinytorch/tinytorch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <tinytorch/distributed.hpp>

#include "../bench/bench_common.hpp"  // report_load: were the timings measured on a quiet machine?
#include "flags.hpp"
#include "gpt.hpp"
#include "gpt_pp.hpp"
#include "gpt_tp.hpp"

namespace tt = tinytorch;
namespace dist = tinytorch::distributed;

namespace {

struct Config {
  std::string data = "data/tinyshakespeare/input.txt";
  int64_t iters = 2000, batch_size = 12, block_size = 64, n_layer = 4, n_head = 4, n_embd = 128;
  double dropout = 0.0, lr = 1e-3, min_lr = 1e-4, weight_decay = 0.1, beta2 = 0.99, grad_clip = 1.0;
  int64_t warmup_iters = 100, eval_interval = 250, eval_iters = 20, log_interval = 10;
  uint64_t seed = 1337;
  int threads = 0;
  int64_t tp = 1;  ///< tensor-parallel size (ranks per model replica)
  int64_t dp = 0;  ///< data-parallel replicas (0: ranks / tp)
  int64_t pp = 1;  ///< pipeline stages (one per rank)
  int64_t microbatches = 1;
  std::string schedule = "1f1b";
  std::string save, resume;
  int64_t sample = 0, top_k = 200;
  double temperature = 0.8;
};

/// The text, its vocabulary (distinct bytes in order) and the tokens of each split.
struct Corpus {
  std::vector<unsigned char> vocab;
  std::vector<int64_t> train, val;
};

Corpus read_corpus(const std::string& path, int64_t block_size) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw tt::Error("--data " + path + " is a directory, not a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw tt::Error("cannot open " + path +
                    " (run from the repository root, or pass --data PATH to Tiny Shakespeare's input.txt)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw tt::Error("cannot read " + path);
  Corpus c;
  bool seen[256] = {};
  for (unsigned char ch : text) seen[ch] = true;
  int64_t stoi[256];
  for (int b = 0; b < 256; ++b)
    if (seen[b]) {
      stoi[b] = static_cast<int64_t>(c.vocab.size());
      c.vocab.push_back(static_cast<unsigned char>(b));
    }
  const size_t n_train = static_cast<size_t>(static_cast<double>(text.size()) * 0.9);  // int(n * 0.9)
  for (size_t i = 0; i < text.size(); ++i)
    (i < n_train ? c.train : c.val).push_back(stoi[static_cast<unsigned char>(text[i])]);
  // A batch window needs block_size + 1 characters (its targets are shifted by one) in each split.
  for (const auto* split : {&c.train, &c.val})
    if (static_cast<int64_t>(split->size()) < block_size + 1)
      throw tt::Error(path + ": the " + (split == &c.train ? "training" : "validation") + " split has " +
                      std::to_string(split->size()) + " characters (" + std::to_string(text.size()) +
                      " in the file, 90%/10%), fewer than --block-size + 1 = " + std::to_string(block_size + 1));
  return c;
}

/// x, y: (B, T) windows at random offsets and the same shifted by one (nanoGPT's get_batch).
std::pair<tt::Tensor, tt::Tensor> get_batch(const std::vector<int64_t>& data, int64_t B, int64_t T, tt::Generator& gen) {
  const tt::Tensor ix = tt::randint(0, static_cast<int64_t>(data.size()) - T, {B}, tt::kInt64, &gen);
  tt::Tensor x = tt::empty({B, T}, tt::kInt64), y = tt::empty({B, T}, tt::kInt64);
  int64_t* px = x.data_ptr<int64_t>();
  int64_t* py = y.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = ix.data_ptr<int64_t>()[b];
    std::copy(data.begin() + i, data.begin() + i + T, px + b * T);
    std::copy(data.begin() + i + 1, data.begin() + i + 1 + T, py + b * T);
  }
  return {x, y};
}

/// The mean loss over `iters` random batches of each split, in eval mode without autograd (every
/// rank computes it: the ranks of a tp group, or the stages of a pipeline, together). loss(x, y):
/// one batch's mean loss.
template <class LossOfBatch>
std::pair<double, double> estimate_loss(tt::nn::Module& model, const LossOfBatch& loss, const Corpus& c,
                                        const Config& cfg, tt::Generator& gen) {
  tt::NoGradGuard ng;
  model.eval();
  double out[2] = {0, 0};
  for (int split = 0; split < 2; ++split)
    for (int64_t k = 0; k < cfg.eval_iters; ++k) {
      auto [x, y] = get_batch(split == 0 ? c.train : c.val, cfg.batch_size, cfg.block_size, gen);
      out[split] += loss(x, y) / static_cast<double>(cfg.eval_iters);
    }
  model.train();
  return {out[0], out[1]};
}

/// Micro-batch k of M of a (B, T) batch, for k = 0 .. M-1.
std::vector<tt::Tensor> split_batch(const tt::Tensor& t, int64_t M) {
  std::vector<tt::Tensor> out;
  const int64_t b = t.size(0) / M;
  for (int64_t k = 0; k < M; ++k) out.push_back(t.narrow(0, k * b, b).contiguous());
  return out;
}

examples::GPTConfig model_config(const Config& cfg, int64_t vocab_size) {
  examples::GPTConfig g;
  g.block_size = cfg.block_size;
  g.vocab_size = vocab_size;
  g.n_layer = cfg.n_layer;
  g.n_head = cfg.n_head;
  g.n_embd = cfg.n_embd;
  g.dropout = cfg.dropout;
  return g;
}

int sample(const Config& cfg) {
  auto sd = tt::load(cfg.resume);
  auto get = [&](const std::string& key) {
    for (const auto& [k, v] : sd)
      if (k == key) return v;
    throw tt::Error(cfg.resume + " has no entry '" + key + "' (not written by train_gpt --save?)");
  };
  // The checkpoint's config and vocabulary, checked before anything is built from them (the
  // ranges of the training flags; a vocabulary of distinct bytes).
  auto config_value = [&](const std::string& key, int64_t hi) {
    const tt::Tensor t = get(key);
    TT_CHECK(t.dtype() == tt::kInt64 && t.numel() == 1, cfg.resume, ": '", key, "' must be one int64 value, got ",
             tt::dtype_name(t.dtype()), " of shape ", tt::shape_str(t.sizes()));
    const int64_t v = t.item<int64_t>();
    TT_CHECK(v >= 1 && v <= hi, cfg.resume, ": '", key, "' = ", v, " is outside [1, ", hi, "]");
    return v;
  };
  examples::GPTConfig g;
  g.block_size = config_value("config.block_size", 100000);
  g.n_layer = config_value("config.n_layer", 1000);
  g.n_head = config_value("config.n_head", 1000);
  g.n_embd = config_value("config.n_embd", 100000);
  const tt::Tensor vocab_t = get("vocab");
  TT_CHECK(vocab_t.dtype() == tt::kInt64 && vocab_t.dim() == 1 && vocab_t.numel() >= 1 && vocab_t.numel() <= 256,
           cfg.resume, ": 'vocab' must be 1 to 256 int64 byte values, got ", tt::dtype_name(vocab_t.dtype()),
           " of shape ", tt::shape_str(vocab_t.sizes()));
  const std::vector<int64_t> vocab = vocab_t.tolist<int64_t>();
  bool seen[256] = {};
  for (int64_t b : vocab) {
    TT_CHECK(b >= 0 && b <= 255 && !seen[b], cfg.resume, ": 'vocab' holds ", b, ", not a new byte value in [0, 255]");
    seen[b] = true;
  }
  g.vocab_size = static_cast<int64_t>(vocab.size());
  examples::GPT model(g);
  std::vector<std::pair<std::string, tt::Tensor>> model_sd;
  for (const auto& [k, v] : sd)
    if (k.rfind("model.", 0) == 0) model_sd.emplace_back(k.substr(6), v);
  model.load_state_dict(model_sd);
  model.eval();
  tt::NoGradGuard ng;
  tt::Generator gen(cfg.seed);
  const auto nl = std::find(vocab.begin(), vocab.end(), int64_t{'\n'});
  std::vector<int64_t> tokens{nl == vocab.end() ? 0 : nl - vocab.begin()};
  for (int64_t n = 0; n < cfg.sample; ++n) {
    const int64_t T = std::min<int64_t>(static_cast<int64_t>(tokens.size()), g.block_size);
    const tt::Tensor idx = tt::tensor(std::vector<double>(tokens.end() - T, tokens.end()), {1, T}, tt::kInt64);
    const std::vector<double> logits = model(idx).select(1, T - 1).reshape({-1}).tolist<double>();
    for (double l : logits)
      TT_CHECK(std::isfinite(l), cfg.resume, ": the model gives a non-finite logit (", l, "): its weights are broken");
    // top-k, then softmax(logits / temperature), then one draw
    std::vector<double> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    const double kth = sorted[static_cast<size_t>(std::min<int64_t>(cfg.top_k, g.vocab_size) - 1)];
    const double mx = sorted[0];
    std::vector<double> p(logits.size());
    double total = 0;
    for (size_t v = 0; v < logits.size(); ++v) total += p[v] = logits[v] < kth ? 0.0 : std::exp((logits[v] - mx) / cfg.temperature);
    double u = gen.uniform() * total;
    size_t pick = 0;
    while (pick + 1 < p.size() && u >= p[pick]) u -= p[pick++];
    tokens.push_back(static_cast<int64_t>(pick));
    std::putchar(static_cast<int>(vocab[pick]));
  }
  std::putchar('\n');
  return 0;
}

int train(const Config& cfg) {
  TT_CHECK(cfg.min_lr <= cfg.lr, "--min-lr ", cfg.min_lr, " is above --lr ", cfg.lr,
           ": the cosine decay would raise the learning rate");
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const bool is_main = rank == 0;
  TT_CHECK(world % cfg.tp == 0, "--tp ", cfg.tp, " does not divide the number of ranks ", world,
           " (the ranks form a dp x tp grid; run with mpirun -np a multiple of --tp)");
  const bool pipelined = cfg.pp > 1 || cfg.microbatches > 1;
  const int64_t dp = pipelined ? 1 : world / cfg.tp;  // data-parallel replicas
  TT_CHECK(cfg.dp == 0 || (!pipelined && cfg.dp * cfg.tp == world), "--dp ", cfg.dp, " x --tp ", cfg.tp, " = ",
           cfg.dp * cfg.tp, " but there are ", world, " ranks", pipelined ? " (and --dp does not combine with --pp)" : "",
           "; the ranks form a dp x tp grid");
  TT_CHECK(cfg.batch_size % dp == 0, "--batch-size ", cfg.batch_size, " is not divisible by the ", dp,
           " data-parallel replicas (ranks / --tp)");
  TT_CHECK(cfg.n_head % cfg.tp == 0, "--n-head ", cfg.n_head, " is not divisible by --tp ", cfg.tp,
           " (each rank keeps n_head / tp heads)");
  TT_CHECK(cfg.tp == 1 || cfg.dropout == 0.0, "--dropout ", cfg.dropout, " with --tp ", cfg.tp,
           ": tensor-parallel dropout is not supported (set --dropout 0)");
  TT_CHECK(world == 1 || cfg.save.empty(), "--save is for one process (the ranks hold shards of the model)");
  TT_CHECK(!pipelined || (world == cfg.pp && cfg.tp == 1), "--pp ", cfg.pp,
           cfg.pp == 1 ? " (the one-stage pipeline that --microbatches runs)" : "", " needs exactly ", cfg.pp,
           cfg.pp == 1 ? " rank" : " ranks", " (mpirun -np ", cfg.pp, "), one stage each, and --tp 1 (got ", world,
           " ranks, --tp ", cfg.tp, "): train_gpt does not combine pipeline stages with data or tensor parallelism");
  TT_CHECK(cfg.batch_size % cfg.microbatches == 0, "--batch-size ", cfg.batch_size, " is not divisible by --microbatches ",
           cfg.microbatches);
  TT_CHECK(cfg.pp <= cfg.n_layer, "--pp ", cfg.pp, " stages for --n-layer ", cfg.n_layer, " blocks: a stage would hold no block");
  TT_CHECK(cfg.pp == 1 || cfg.dropout == 0.0, "--dropout ", cfg.dropout, " with --pp ", cfg.pp,
           ": pipeline-parallel dropout is not supported (set --dropout 0)");
  if (!cfg.save.empty()) {  // fail now, not after the whole run
    const std::filesystem::path dir = std::filesystem::absolute(cfg.save).parent_path();
    std::error_code ec;
    TT_CHECK(std::filesystem::is_directory(dir, ec), "--save ", cfg.save, ": the directory ", dir.string(),
             " does not exist");
  }
  if (cfg.threads > 0) tt::set_num_threads(cfg.threads);
  const Corpus corpus = read_corpus(cfg.data, cfg.block_size);
  const auto V = static_cast<int64_t>(corpus.vocab.size());
  if (is_main)
    std::printf("data: %s, %zu train and %zu val tokens, vocab_size=%lld\n", cfg.data.c_str(), corpus.train.size(),
                corpus.val.size(), static_cast<long long>(V));
  tt::manual_seed(cfg.seed);
  auto model = std::make_shared<examples::GPT>(model_config(cfg, V));
  const int64_t n_params = model->num_params();  // the whole model's, before any split
  if (is_main) std::printf("number of parameters: %.2fM\n", static_cast<double>(n_params) / 1e6);
  // Several ranks: a (dp, tp) mesh; the Blocks split over tp, DDP over dp.
  std::optional<dist::DeviceMesh> mesh;
  std::shared_ptr<dist::DistributedDataParallel> ddp;
  int64_t dp_rank = 0;
  // Pipelined: this rank's stage of the model (gpt_pp.hpp), the first and last stage tied.
  std::shared_ptr<examples::GPTStage> stage_module;
  std::optional<dist::PipelineStage> stage;
  std::shared_ptr<dist::ProcessGroup> embedding_group;
  if (pipelined) {
    stage_module = std::make_shared<examples::GPTStage>(*model, rank, cfg.pp);
    const int64_t b = cfg.batch_size / cfg.microbatches;
    const tt::Tensor example = rank == 0 ? tt::zeros({b, cfg.block_size}, tt::kInt64)
                                         : tt::zeros({b, cfg.block_size, cfg.n_embd});
    stage.emplace(stage_module, dist::get_default_group(), example);
    if (cfg.pp > 1) embedding_group = dist::new_group({0, static_cast<int>(cfg.pp) - 1}, "embedding");
    if (is_main)
      std::printf("pipeline: %lld stages (blocks %s), %lld micro-batches of %lld, schedule %s\n",
                  static_cast<long long>(cfg.pp),
                  [&] {
                    std::string s;
                    for (int64_t k = 0; k < cfg.pp; ++k) {
                      const auto [a, z] = examples::stage_blocks(cfg.n_layer, cfg.pp, k);
                      s += (k ? " | " : "") + std::to_string(a) + "-" + std::to_string(z - 1);
                    }
                    return s;
                  }().c_str(),
                  static_cast<long long>(cfg.microbatches), static_cast<long long>(b), cfg.schedule.c_str());
  } else if (world > 1) {
    mesh.emplace("cpu", std::vector<int64_t>{dp, cfg.tp}, std::vector<std::string>{"dp", "tp"});
    dp_rank = mesh->get_local_rank("dp");
    if (cfg.tp > 1) examples::parallelize_gpt(*model, *mesh->get_group("tp"));
    if (dp > 1) {
      dist::DDPOptions o;
      o.process_group = mesh->get_group("dp");
      ddp = std::make_shared<dist::DistributedDataParallel>(model, o);
    }
    if (is_main)
      std::printf("ranks: %d = dp %lld x tp %lld (%s); each rank holds %.2fM parameters\n", world,
                  static_cast<long long>(dp), static_cast<long long>(cfg.tp), mesh->str().c_str(),
                  static_cast<double>(model->num_params()) / 1e6);
  }
  auto opt = pipelined ? examples::configure_adamw(stage_module->parameters(), cfg.weight_decay, cfg.lr, {0.9, cfg.beta2})
                       : model->configure_optimizers(cfg.weight_decay, cfg.lr, {0.9, cfg.beta2});
  const auto schedule = cfg.schedule == "gpipe" ? dist::pipeline::Schedule::GPipe : dist::pipeline::Schedule::OneFOneB;
  auto loss_fn = [&](const tt::Tensor& logits, const tt::Tensor& targets) { return model->loss(logits, targets); };
  // One batch's loss without autograd (evaluation), and one training step (returns the loss).
  auto eval_loss = [&](const tt::Tensor& x, const tt::Tensor& y) {
    if (pipelined) return stage->evaluate(cfg.microbatches, split_batch(x, cfg.microbatches), split_batch(y, cfg.microbatches), loss_fn);
    return model->loss(model->forward(x), y).item();
  };
  double busy_seconds = 0, wall_seconds = 0;  // the pipeline's, over the iterations after the first
  auto train_step = [&](int64_t it, tt::Tensor x, tt::Tensor y) {
    double loss_value = 0;
    if (pipelined) {
      const dist::PipelineStepStats st =
          stage->step(cfg.microbatches, split_batch(x, cfg.microbatches), split_batch(y, cfg.microbatches), loss_fn, schedule);
      if (it > 0) busy_seconds += st.busy_seconds, wall_seconds += st.wall_seconds;
      stage_module->tie_embedding_grads(embedding_group.get());
      if (cfg.grad_clip > 0)
        dist::clip_grad_norm_across_(stage_module->norm_parameters(), stage_module->parameters(), cfg.grad_clip,
                                     dist::get_default_group());
      loss_value = st.loss;
    } else {
      if (dp > 1) {  // this replica's rows of the batch every rank drew
        const int64_t b = cfg.batch_size / dp;
        x = x.narrow(0, dp_rank * b, b).contiguous();
        y = y.narrow(0, dp_rank * b, b).contiguous();
      }
      tt::Tensor loss = model->loss(ddp ? ddp->forward(x) : model->forward(x), y);
      loss.backward();
      if (cfg.grad_clip > 0) {
        if (cfg.tp > 1)
          dist::clip_grad_norm_tensor_parallel_(*model, cfg.grad_clip, *mesh->get_group("tp"));
        else
          tt::nn::utils::clip_grad_norm_(model->parameters(), cfg.grad_clip);
      }
      loss_value = loss.item();
    }
    opt->step();
    opt->zero_grad();
    return loss_value;
  };
  tt::Generator gen(cfg.seed);
  const int64_t tokens_per_iter = cfg.batch_size * cfg.block_size;
  // nanoGPT's estimate_mfu: 6N per token for the matrix products (forward 2N, backward 4N) plus
  // 12 L H Q T for attention's two (T x T) products (Q = C / H, the head size). N: the whole model.
  const double flops_per_token =
      6.0 * static_cast<double>(n_params) +
      12.0 * static_cast<double>(cfg.n_layer * cfg.n_head * (cfg.n_embd / cfg.n_head) * cfg.block_size);
  if (is_main)
    std::printf("tokens per iteration: %lld, FLOPs per iteration: %.3g, threads: %d\n",
                static_cast<long long>(tokens_per_iter), flops_per_token * static_cast<double>(tokens_per_iter),
                tt::get_num_threads());
  double val_loss = 0;
  dist::TensorParallelStats tp_step;
  const bench::LoadWatch watch;
  const double cpu0 = bench::LoadWatch::process_cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t it = 0; it <= cfg.iters; ++it) {
    const double lr = examples::gpt_lr(it, cfg.lr, cfg.min_lr, cfg.warmup_iters, cfg.iters);
    for (auto& g : opt->param_groups()) g.lr = lr;
    if (it % cfg.eval_interval == 0 || it == cfg.iters) {
      const auto [train_loss, vl] = estimate_loss(*model, eval_loss, corpus, cfg, gen);
      val_loss = vl;
      if (is_main) std::printf("step %lld: train loss %.4f, val loss %.4f\n", static_cast<long long>(it), train_loss, vl);
      std::fflush(stdout);
      t0 = std::chrono::steady_clock::now();  // evaluation is not training time
    }
    if (it == cfg.iters) break;
    auto [x, y] = get_batch(corpus.train, cfg.batch_size, cfg.block_size, gen);
    dist::tensor_parallel_stats() = {};
    const double loss = train_step(it, x, y);
    if (it == 0) tp_step = dist::tensor_parallel_stats();  // one training iteration's traffic
    const auto t1 = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(t1 - t0).count();
    t0 = t1;
    if (it % cfg.log_interval == 0) {
      double shown = loss;
      if (dp > 1) mesh->get_group("dp")->all_reduce(&shown, 1, tt::kFloat64, dist::ReduceOp::AVG, dist::Completion::Blocking);
      if (is_main)
        std::printf("iter %lld: loss %.4f, time %.2fms, %.0f tokens/s, %.1f GFLOP/s\n", static_cast<long long>(it),
                    shown, dt * 1000, static_cast<double>(tokens_per_iter) / dt,
                    flops_per_token * static_cast<double>(tokens_per_iter) / dt / 1e9);
      std::fflush(stdout);
    }
  }
  bench::report_load(watch, cpu0, "the tokens/s figures", "", tt::get_num_threads());  // a core per thread of every rank
  if (!cfg.save.empty()) {
    std::vector<std::pair<std::string, tt::Tensor>> ck;
    for (const auto& [k, v] : model->state_dict()) ck.emplace_back("model." + k, v);
    ck.emplace_back("config.block_size", tt::scalar_tensor(cfg.block_size, tt::kInt64));
    ck.emplace_back("config.n_layer", tt::scalar_tensor(cfg.n_layer, tt::kInt64));
    ck.emplace_back("config.n_head", tt::scalar_tensor(cfg.n_head, tt::kInt64));
    ck.emplace_back("config.n_embd", tt::scalar_tensor(cfg.n_embd, tt::kInt64));
    ck.emplace_back("vocab", tt::tensor(std::vector<double>(corpus.vocab.begin(), corpus.vocab.end()), tt::kInt64));
    tt::save(ck, cfg.save);
    std::printf("saved: %s\n", cfg.save.c_str());
  }
  if (cfg.tp > 1 && is_main) {
    // What f and g all-reduced in one iteration, beside Megatron-LM's count: per block two
    // all-reduces of the (B, T, C) activations in forward (after attention, after the MLP) and two
    // in backward, B = this replica's batch (tensor_parallel.hpp).
    const int64_t B = cfg.batch_size / dp;
    std::printf("tensor-parallel all-reduces per iteration: %lld (%lld per block), %lld bytes; Megatron's "
                "4 x B x T x C x 4 bytes x n_layer = 4 x %lld x %lld x %lld x 4 x %lld = %lld\n",
                static_cast<long long>(tp_step.all_reduces), static_cast<long long>(tp_step.all_reduces / cfg.n_layer),
                static_cast<long long>(tp_step.all_reduce_bytes), static_cast<long long>(B),
                static_cast<long long>(cfg.block_size), static_cast<long long>(cfg.n_embd),
                static_cast<long long>(cfg.n_layer),
                static_cast<long long>(4 * B * cfg.block_size * cfg.n_embd * 4 * cfg.n_layer));
  }
  if (pipelined && cfg.iters > 1) {
    // Each stage's busy fraction (compute / wall time of the steps after the first) beside the
    // schedule's bound M / (M + P - 1) (distributed/pipeline_schedule.hpp).
    std::vector<double> mine{busy_seconds, wall_seconds}, all(static_cast<size_t>(2 * world));
    dist::get_default_group().all_gather(all.data(), mine.data(), 2, tt::kFloat64, dist::Completion::Blocking);
    if (is_main) {
      std::string line;
      double mean = 0;
      for (int k = 0; k < world; ++k) {
        const double f = all[static_cast<size_t>(2 * k)] / all[static_cast<size_t>(2 * k + 1)];
        mean += f / world;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s stage %d %.1f%%", k ? "," : "", k, 100 * f);
        line += buf;
      }
      std::printf("pipeline busy fraction:%s; mean %.1f%%, ideal M/(M+P-1) = %.1f%%\n", line.c_str(), 100 * mean,
                  100 * dist::pipeline::pipeline_efficiency(cfg.pp, cfg.microbatches));
    }
  }
  if (is_main) std::printf("val_loss=%.4f\n", val_loss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"tinytorch train_gpt: a character-level GPT on Tiny Shakespeare (nanoGPT's shakespeare_char)"};
  app.option_defaults()->always_capture_default();  // --help shows each default
  app.add_option("--data", cfg.data, "the text to train on (default: data/tinyshakespeare/input.txt)");
  app.add_option("--iters", cfg.iters, "training iterations (the cosine decay ends there)")
      ->check(flags::integer_in(1, 100000000));
  app.add_option("--batch-size", cfg.batch_size, "sequences per batch")->check(flags::integer_in(1, 100000));
  app.add_option("--block-size", cfg.block_size, "context length T")->check(flags::integer_in(1, 100000));
  app.add_option("--n-layer", cfg.n_layer, "transformer blocks")->check(flags::integer_in(1, 1000));
  app.add_option("--n-head", cfg.n_head, "attention heads (must divide --n-embd)")->check(flags::integer_in(1, 1000));
  app.add_option("--n-embd", cfg.n_embd, "model width C")->check(flags::integer_in(1, 100000));
  app.add_option("--dropout", cfg.dropout, "dropout probability")->check(flags::real_in(0, 1, flags::kHighOpen));
  app.add_option("--lr", cfg.lr, "peak learning rate")->check(flags::real_in(0, flags::kInf, flags::kLowOpen));
  app.add_option("--min-lr", cfg.min_lr, "learning rate at the end of the cosine decay")->check(flags::real_in(0, flags::kInf));
  app.add_option("--warmup-iters", cfg.warmup_iters, "linear warmup iterations")->check(flags::integer_in(0, 100000000));
  app.add_option("--weight-decay", cfg.weight_decay, "AdamW weight decay of the matrices")->check(flags::real_in(0, flags::kInf));
  app.add_option("--beta2", cfg.beta2, "AdamW beta2")->check(flags::real_in(0, 1, flags::kHighOpen));
  app.add_option("--grad-clip", cfg.grad_clip, "clip the gradient norm to this (0: no clipping)")->check(flags::real_in(0, flags::kInf));
  app.add_option("--eval-interval", cfg.eval_interval, "iterations between loss estimates")->check(flags::integer_in(1, 100000000));
  app.add_option("--eval-iters", cfg.eval_iters, "batches per loss estimate")->check(flags::integer_in(1, 100000));
  app.add_option("--log-interval", cfg.log_interval, "iterations between progress lines")->check(flags::integer_in(1, 100000000));
  app.add_option("--seed", cfg.seed, "seed for the initial weights and the batches")->check(flags::seed());
  app.add_option("--threads", cfg.threads, "threads for the matrix products (default: all CPUs)")->check(flags::integer_in(1, 1024));
  app.add_option("--save", cfg.save, "write the trained model, its config and vocabulary to PATH (tinytorch::save)");
  app.add_option("--resume", cfg.resume, "the checkpoint --sample reads");
  app.add_option("--sample", cfg.sample, "generate N characters from --resume's model instead of training")
      ->check(flags::integer_in(1, 100000000));
  app.add_option("--temperature", cfg.temperature, "sampling temperature")->check(flags::real_in(0, flags::kInf, flags::kLowOpen));
  app.add_option("--top-k", cfg.top_k, "sample among the k most likely characters")->check(flags::integer_in(1, 100000));
  app.add_option("--pp", cfg.pp, "pipeline stages under mpirun (one per rank: -np must equal --pp)")
      ->check(flags::integer_in(1, 1024));
  app.add_option("--microbatches", cfg.microbatches, "micro-batches per batch in the pipeline (divides --batch-size)")
      ->check(flags::integer_in(1, 100000));
  app.add_option("--schedule", cfg.schedule, "pipeline schedule: gpipe or 1f1b")
      ->check(CLI::IsMember({"gpipe", "1f1b"}));
  app.add_option("--dp", cfg.dp, "data-parallel replicas under mpirun (default: ranks / --tp; if given, --dp x --tp "
                 "must equal the ranks)")->check(flags::integer_in(1, 1024));
  app.add_option("--tp", cfg.tp, "tensor-parallel size under mpirun: ranks that split each Block (divides the ranks "
                 "and --n-head)")->check(flags::integer_in(1, 1024));
  CLI11_PARSE(app, argc, argv);
  std::optional<dist::ProcessGroupGuard> pg;  // world size 1 without mpirun
  try {
    pg.emplace(dist::Backend::MPI);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_gpt: %s\n", e.what());
    return 2;
  }
  try {
    dist::check_same_command_line("train_gpt", argc, argv);
    if (!cfg.resume.empty() && cfg.sample == 0)
      throw tt::Error("--resume " + cfg.resume + " is read by --sample only: training does not resume from a checkpoint "
                      "(add --sample N to generate from it)");
    if (cfg.sample > 0) {
      if (cfg.resume.empty()) throw tt::Error("--sample needs --resume PATH (a checkpoint from --save)");
      if (dist::get_world_size() > 1) throw tt::Error("--sample is for one process (run it without mpirun)");
      return sample(cfg);
    }
    return train(cfg);
  } catch (const std::exception& e) {
    if (dist::get_world_size() > 1) pg->abort(e);  // "rank r: ...", then MPI_Abort: nobody hangs
    std::fprintf(stderr, "train_gpt: %s\n", e.what());
    return 1;
  }
}
