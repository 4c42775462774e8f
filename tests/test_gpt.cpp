// tests/test_gpt.cpp — examples/gpt.hpp (nanoGPT's model in tinytorch) against nanoGPT in PyTorch:
// the logits, the loss and every parameter's gradient of one batch, then 10 training steps
// (AdamW with nanoGPT's two weight-decay groups, its warmup + cosine learning rate, gradient
// clipping at 1.0): each step's loss and the final parameters, in two configs (bias=False, as
// nanoGPT trains, and bias=True). Also: parameter names and count, the tied output head, the
// scaled init's statistics, the learning-rate schedule, errors.
// Reference numbers: tests/reference/gpt_ref.hpp (tests/reference/gen_gpt.py: nanoGPT's model.py
// and train.py step, with the manual attention path as PyTorch 1.13 has no
// scaled_dot_product_attention). Tolerance 1e-5 (relative, with 1e-6 absolute): float32 sums
// in another order than PyTorch's kernels.
// Tag: [gpt]. Chapter: chapters/12-model-parallelism.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>

#include <tinytorch/tinytorch.hpp>

#include "../examples/gpt.hpp"
#include "reference/gpt_ref.hpp"
#include "reference/ref_arrays.hpp"

using namespace tinytorch;
using Catch::Contains;

namespace {

const gpt_ref::Array& array(const std::string& name) { return ref_arrays::get(gpt_ref::arrays(), name); }
/// The reference array `name` as a tensor (float32 unless told).
Tensor from_ref(const std::string& name, DType dtype = kFloat32) { return ref_arrays::to_tensor(array(name), dtype); }
/// "" when `got` matches the reference array `name` (tests/reference/ref_arrays.hpp); otherwise the first difference.
std::string compare(const Tensor& got, const std::string& name, double rtol = 1e-5, double atol = 1e-6) {
  return ref_arrays::compare(got, array(name), name, rtol, atol);
}

examples::GPTConfig tiny(bool bias) {
  examples::GPTConfig c;
  c.block_size = 8;
  c.vocab_size = 11;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.bias = bias;
  return c;
}

/// The model of config `tag` with PyTorch's initial parameters loaded by name.
std::shared_ptr<examples::GPT> reference_model(const std::string& tag) {
  auto m = std::make_shared<examples::GPT>(tiny(tag == "bias"));
  std::vector<std::pair<std::string, Tensor>> sd;
  for (const auto& n : gpt_ref::names(tag)) sd.emplace_back(n, from_ref(tag + ".param." + n));
  m->load_state_dict(sd);
  return m;
}

// The same constants as gen_gpt.py.
constexpr int kSteps = 10;
constexpr double kLr = 1e-2, kMinLr = 1e-3;
constexpr int64_t kWarmup = 3, kDecay = 10;

}  // namespace

TEST_CASE("GPT: parameter names are nanoGPT's, the head is tied, the init is nanoGPT's", "[gpt]") {
  manual_seed(0);
  examples::GPT m(tiny(false));
  std::vector<std::string> names;
  for (const auto& [n, p] : m.named_parameters()) names.push_back(n);
  CHECK(names == gpt_ref::names("nobias"));
  // 2 blocks x (12 C^2 + 2 C) + V C + T C + C, C = 16: the tied head adds nothing
  CHECK(m.num_params(false) == 2 * (12 * 16 * 16 + 2 * 16) + 11 * 16 + 8 * 16 + 16);
  CHECK(m.num_params() == m.num_params(false) - 8 * 16);
  // nanoGPT's config for Tiny Shakespeare on a CPU: 0.80M parameters, as nanoGPT prints
  CHECK(examples::GPT(examples::GPTConfig{}).num_params() == 795904);  // 4 x (12 x 128^2 + 256) + 65 x 128 + 128
  examples::GPTConfig with_bias;
  with_bias.bias = true;  // + 9C of Linear biases and 2C of LayerNorm biases per block, + C for ln_f
  CHECK(examples::GPT(with_bias).num_params() == 801664);  // 4 x (12 x 128^2 + 13 x 128) + 65 x 128 + 256
  // logits come from wte itself: a change of wte changes the head
  const Tensor idx = zeros({1, 3}, kInt64);
  const Tensor before = m(idx);
  {
    NoGradGuard ng;
    m.transformer->wte->weight.narrow(0, 5, 1).add_(1.0);
  }
  CHECK((m(idx) - before).narrow(2, 5, 1).abs().sum().item() > 0);

  // the scaled init: c_proj weights ~ N(0, 0.02 / sqrt(2 n_layer)), other matrices N(0, 0.02)
  examples::GPTConfig big;
  big.n_layer = 8;
  manual_seed(1);
  examples::GPT g(big);
  auto sd_of = [](const Tensor& t) {
    const double mean = t.mean().item();
    return std::sqrt(((t - mean) * (t - mean)).mean().item());
  };
  CHECK(sd_of(g.get_parameter("transformer.h.0.mlp.c_proj.weight")) == Approx(0.02 / 4).epsilon(0.05));
  CHECK(sd_of(g.get_parameter("transformer.h.0.attn.c_attn.weight")) == Approx(0.02).epsilon(0.05));
  CHECK(g.get_parameter("transformer.h.0.ln_1.weight").sum().item() == 128);
}

TEST_CASE("GPT: logits, loss and gradients of one batch equal nanoGPT's in PyTorch", "[gpt]") {
  for (std::string tag : {"nobias", "bias"}) {
    INFO(tag);
    auto m = reference_model(tag);
    const Tensor idx = from_ref(tag + ".idx", kInt64), targets = from_ref(tag + ".targets", kInt64);
    const Tensor logits = m->forward(idx);
    const Tensor loss = m->loss(logits, targets);
    loss.backward();
    CHECK(compare(logits, tag + ".logits") == "");
    CHECK(compare(loss.reshape({1}), tag + ".loss") == "");
    for (const auto& [n, p] : m->named_parameters()) CHECK(compare(p.grad(), tag + ".grad." + n) == "");
  }
}

TEST_CASE("GPT: 10 AdamW steps with nanoGPT's groups, schedule and clipping give PyTorch's losses", "[gpt]") {
  for (std::string tag : {"nobias", "bias"}) {
    INFO(tag);
    auto m = reference_model(tag);
    auto opt = m->configure_optimizers(0.1, kLr, {0.9, 0.99});
    REQUIRE(opt->param_groups().size() == 2);
    CHECK(opt->param_groups()[1].weight_decay == 0.0);
    const Tensor x = from_ref(tag + ".step.idx", kInt64), y = from_ref(tag + ".step.targets", kInt64);
    for (int it = 0; it < kSteps; ++it) {
      INFO("step " << it);
      const double lr = examples::gpt_lr(it, kLr, kMinLr, kWarmup, kDecay);
      CHECK(lr == Approx(array(tag + ".step.lr" + std::to_string(it)).data[0]).epsilon(1e-8));  // written with 9 digits
      for (auto& g : opt->param_groups()) g.lr = lr;
      Tensor loss = m->loss(m->forward(x), y);
      loss.backward();
      nn::utils::clip_grad_norm_(m->parameters(), 1.0);
      opt->step();
      opt->zero_grad();
      CHECK(compare(loss.detach().reshape({1}), tag + ".step.loss" + std::to_string(it)) == "");
    }
    // Final parameters to 1e-5, except the key projection's bias: it has a zero gradient in exact
    // arithmetic (it shifts a whole row of scores, which softmax ignores), so what it gets is
    // rounding noise of ~1e-9, and Adam divides that by its own root mean square: each step moves
    // it by up to about lr whichever way the noise points, in PyTorch's sums and in ours
    // differently (the composite attention happened to land within 1e-5 of PyTorch's, the fused
    // kernel, which rounds otherwise, 1.0e-5 away). Its bound is the sum of those steps.
    for (const auto& [n, p] : m->named_parameters()) {
      const std::string ref = tag + ".final." + n;
      if (n.size() < 16 || n.compare(n.size() - 16, 16, "attn.c_attn.bias") != 0) {
        CHECK(compare(p, ref, 1e-5, 1e-5) == "");
        continue;
      }
      INFO(n);
      const Tensor diff = (p.detach() - from_ref(ref)).abs();  // (3C): q, k, v biases
      const int64_t C = diff.numel() / 3;
      CHECK(diff.narrow(0, 0, C).max().item() <= 2e-5);      // q
      CHECK(diff.narrow(0, 2 * C, C).max().item() <= 2e-5);  // v
      CHECK(diff.narrow(0, C, C).max().item() <= kSteps * kLr);  // k: noise-driven
    }
  }
}

TEST_CASE("GPT: the learning-rate schedule and the errors", "[gpt]") {
  CHECK(examples::gpt_lr(0, 1e-3, 1e-4, 100, 2000) == 0.0);
  CHECK(examples::gpt_lr(50, 1e-3, 1e-4, 100, 2000) == Approx(5e-4));
  CHECK(examples::gpt_lr(100, 1e-3, 1e-4, 100, 2000) == Approx(1e-3));
  CHECK(examples::gpt_lr(1050, 1e-3, 1e-4, 100, 2000) == Approx(5.5e-4));
  CHECK(examples::gpt_lr(2000, 1e-3, 1e-4, 100, 2000) == Approx(1e-4));
  CHECK(examples::gpt_lr(5000, 1e-3, 1e-4, 100, 2000) == 1e-4);
  examples::GPT m(tiny(false));
  REQUIRE_THROWS_WITH(m(zeros({1, 9}, kInt64)), Contains("GPT: Cannot forward sequence of length 9, block size is only 8"));
  REQUIRE_THROWS_WITH(m(zeros({9}, kInt64)), Contains("expected idx of shape (B, T)"));
  REQUIRE_THROWS_WITH(m(full({1, 2}, 11, kInt64)), Contains("embedding: index 11 is out of range for a weight of 11 rows"));
  examples::GPTConfig bad = tiny(false);
  bad.n_head = 3;
  REQUIRE_THROWS_WITH(examples::GPT(bad), Contains("n_embd (16) must be divisible by n_head (3)"));
}
