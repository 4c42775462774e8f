// examples/train_mnist.cpp — the main job: an MLP on Fashion-MNIST.
//
// Model: 784 -> 256 -> 128 -> 10 (ReLU between; --hidden changes the middle), CrossEntropyLoss.
// Data: Fashion-MNIST IDX files (Debian's dataset-fashion-mnist), images scaled to [0, 1] and
//       normalised with mean 0.2860, std 0.3530: x' = (x - 0.2860) / 0.3530.
// Recipe (defaults): batch 64, SGD(lr=0.02, momentum=0.9), CosineAnnealingLR over all
//       iterations (stepped every batch), 10 epochs. PyTorch reaches 0.8953-0.8965 test accuracy
//       with this recipe (3 seeds); the Fashion-MNIST benchmark's MLP 256-128-100 has 0.8833.
// Output: a progress line while an epoch runs (live on a terminal, periodic lines otherwise), one
//       summary line per epoch, and last `test_accuracy=0.xxxx`.
//   build/bin/train_mnist                         # the full run (about a minute per epoch or less)
//   build/bin/train_mnist --epochs 1 --limit 6000 # a quick look
// Chapter: chapters/01-training-loop.md.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <tinytorch/tinytorch.hpp>
#include <vector>

namespace tt = tinytorch;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string data_dir;
  int epochs = 10;
  int64_t batch_size = 64;
  double lr = 0.02;
  double momentum = 0.9;
  std::vector<int64_t> hidden{256, 128};
  uint64_t seed = 0;
  int threads = 1;
  int64_t limit = 0;  // 0: all training images
};

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

int run(const Config& cfg) {
  tt::manual_seed(cfg.seed);
  Eigen::setNbThreads(cfg.threads);
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

  tt::data::DataLoaderOptions opts;
  opts.batch_size = cfg.batch_size;
  opts.shuffle = true;
  opts.seed = cfg.seed;
  tt::data::DataLoader loader(tt::data::TensorDataset(train_x, train_y), opts);

  auto model = make_mlp(cfg.hidden);
  tt::optim::SGD optimizer(model->parameters(), cfg.lr, cfg.momentum);
  const int64_t iters_per_epoch = static_cast<int64_t>(loader.size());
  tt::optim::lr_scheduler::CosineAnnealingLR scheduler(optimizer, cfg.epochs * iters_per_epoch);
  tt::nn::CrossEntropyLoss loss_fn;

  const bool tty = isatty(fileno(stdout));
  std::printf("train_mnist: %lld training / %lld test images from %s, batch %lld, lr %g, momentum %g, %d epochs\n",
              (long long)train_x.size(0), (long long)test_x.size(0), dir.c_str(), (long long)cfg.batch_size,
              cfg.lr, cfg.momentum, cfg.epochs);
  std::fflush(stdout);

  double test_acc = 0;
  for (int epoch = 1; epoch <= cfg.epochs; ++epoch) {
    model->train();
    auto t0 = Clock::now();
    double loss_sum = 0;
    int64_t seen = 0, correct = 0, it = 0;
    for (auto& batch : loader) {
      optimizer.zero_grad();
      tt::Tensor logits = model->forward(batch.data);     // (B, 10)
      tt::Tensor loss = loss_fn(logits, batch.target);    // scalar
      loss.backward();
      optimizer.step();
      scheduler.step();

      const int64_t b = batch.data.size(0);
      loss_sum += loss.item<double>() * static_cast<double>(b);
      correct += logits.argmax(1).eq(batch.target).sum().item<int64_t>();
      seen += b;
      ++it;
      const bool report = tty ? (it % 20 == 0) : (it % std::max<int64_t>(1, iters_per_epoch / 4) == 0);
      if (report && it < iters_per_epoch) {
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        std::printf("%sepoch %d/%d [%lld/%lld] loss=%.4f samples/s=%.0f%s", tty ? "\r" : "", epoch, cfg.epochs,
                    (long long)it, (long long)iters_per_epoch, loss_sum / seen, seen / secs, tty ? "" : "\n");
        std::fflush(stdout);
      }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    model->eval();
    test_acc = static_cast<double>(count_correct(*model, test_x, test_y)) / static_cast<double>(test_x.size(0));
    std::printf("%sepoch %d/%d loss=%.4f train_acc=%.4f test_acc=%.4f samples/s=%.0f time=%.1fs\n",
                tty ? "\r\033[K" : "", epoch, cfg.epochs, loss_sum / seen, static_cast<double>(correct) / seen,
                test_acc, seen / secs, secs);
    std::fflush(stdout);
  }
  std::printf("test_accuracy=%.4f\n", test_acc);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"tinytorch train_mnist: an MLP on Fashion-MNIST"};
  app.add_option("--data-dir", cfg.data_dir,
                 "directory with the IDX files (default: $TINYTORCH_DATA, else /usr/share/datasets/fashion-mnist)");
  app.add_option("--epochs", cfg.epochs, "training epochs")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", cfg.batch_size, "samples per batch")->check(CLI::PositiveNumber);
  app.add_option("--lr", cfg.lr, "peak learning rate (cosine-annealed to 0)")->check(CLI::PositiveNumber);
  app.add_option("--momentum", cfg.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0));
  app.add_option("--hidden", cfg.hidden, "hidden layer sizes, e.g. 256,128")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--seed", cfg.seed, "seed for initial weights and shuffling");
  app.add_option("--threads", cfg.threads, "Eigen threads for the matrix products (needs OpenMP)")->check(CLI::PositiveNumber);
  app.add_option("--limit", cfg.limit, "train on the first N training images only")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mnist: %s\n", e.what());
    return 1;
  }
}
