// examples/example_single.cpp — one process, one model, the smallest complete training loop.
//
// Port of the seed article's example_dp.py loop (without DataParallel: one CPU process).
// Prints "epoch k: loss=0.xxxx" for k = 0..4 (4 decimals, as the article's script); with the
// default fixed initial weights the numbers equal PyTorch's to the printed digits.
//   build/bin/example_single                 # fixed init, PyTorch's numbers
//   build/bin/example_single --random-init   # weights drawn from the seeded generator
//   build/bin/example_single --dot graph.dot # also writes epoch 0's backward graph (Graphviz)
//   build/bin/example_single --device cuda   # the same loop on cuda:0 (the same printed losses);
//   build/bin/example_single_sim --device cuda   # ... in the kernel simulator (no GPU needed)
// --dot writes autograd::to_dot(loss, model.named_parameters(), "loss") of the first epoch, before
// its backward (the graph is freed by backward), and prints where it wrote it; render it with
// `dot -Tsvg graph.dot -o graph.svg`. It also prints the first step's gradients, from
// post-accumulate-grad hooks on the parameters (PyTorch's print(model.bias.grad) format).
// Chapter: chapters/01-training-loop.md (the loop), chapters/02-autograd.md (--dot).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "single_loop.hpp"
#include "device_flag.hpp"
#include "flags.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tinytorch example_single: Linear(2,1) + MSELoss + SGD(lr=0.01) on two samples"};
  bool random_init = false;
  int epochs = 5;
  uint64_t seed = 0;
  std::string dot_path;
  std::string device_text = "cpu";
  app.add_flag("--random-init", random_init, "draw the initial weights instead of the fixed ones");
  app.add_option("--epochs", epochs, "number of epochs")->check(flags::integer_in(1, 1000000));
  app.add_option("--seed", seed, "seed for --random-init")->check(flags::seed());
  app.add_option("--dot", dot_path, "write the first epoch's autograd graph (Graphviz dot) to this file");
  app.add_option("--device", device_text, "where the model and data live: cpu, cuda (= cuda:0) or cuda:N")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const tinytorch::Device device = examples::parse_device(device_text);
    if (device.is_cuda()) std::printf("%s\n", examples::describe_device(device).c_str());
    examples::LossCallback write_dot;
    bool first_step = false;  // print the gradients of epoch 0 only
    if (!dot_path.empty())
      write_dot = [&](int epoch, const tinytorch::Tensor& loss, const tinytorch::nn::Module& model) {
        first_step = epoch == 0;
        if (epoch != 0) return;
        // A post-accumulate-grad hook runs when backward has written a parameter's .grad
        // (chapter 02, "Hooks"): here it prints the first step's gradients.
        for (const auto& [name, p] : model.named_parameters())
          p.register_post_accumulate_grad_hook([&first_step, name = name](tinytorch::Tensor& leaf) {
            if (first_step) std::printf("epoch 0: %s.grad = %s\n", name.c_str(), leaf.grad().str().c_str());
          });
        std::ofstream f(dot_path);
        if (!f) throw std::runtime_error("--dot: cannot open '" + dot_path + "' for writing");
        f << tinytorch::autograd::to_dot(loss, model.named_parameters(), "loss");
        f.close();
        if (!f) throw std::runtime_error("--dot: writing '" + dot_path + "' failed");
        const bool ends_dot = dot_path.size() > 4 && dot_path.compare(dot_path.size() - 4, 4, ".dot") == 0;
        const std::string svg = (ends_dot ? dot_path.substr(0, dot_path.size() - 4) : dot_path) + ".svg";
        std::printf("wrote the autograd graph of epoch 0's loss to %s (render it: dot -Tsvg %s -o %s)\n",
                    dot_path.c_str(), dot_path.c_str(), svg.c_str());
      };
    std::vector<double> losses = examples::train_single(epochs, random_init, seed, write_dot, device);
    for (size_t k = 0; k < losses.size(); ++k) std::printf("epoch %zu: loss=%.4f\n", k, losses[k]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_single: %s\n", e.what());
    return 1;
  }
  return 0;
}
