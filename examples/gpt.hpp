// examples/gpt.hpp — a small GPT (decoder-only transformer), nanoGPT's model.py in tinytorch.
//
// Shapes (B batch, T <= block_size positions, C = n_embd, nh = n_head, hs = C / nh, V vocab):
//   idx (B, T) int64 tokens
//   x = wte(idx) + wpe(arange(T))                               (B, T, C)
//   n_layer Blocks:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))   (pre-norm residual)
//     attn: q, k, v = split(c_attn(x), C)  -> each (B, nh, T, hs)
//           y = softmax(q k^T / sqrt(hs) + causal mask) v          (scaled_dot_product_attention)
//           c_proj(y as (B, T, C))
//     mlp:  c_proj(gelu(c_fc(x)))                                  C -> 4C -> C
//   logits = ln_f(x) wte^T                                          (B, T, V): the output head is
//            the token embedding itself (weight tying), so it is one parameter, listed once as
//            "transformer.wte.weight" (PyTorch's named_parameters lists a tied tensor once too).
//   loss = cross_entropy(logits (B*T, V), targets (B*T))
// Parameters: per block 12 C^2 (c_attn 3C^2, attn c_proj C^2, c_fc 4C^2, mlp c_proj 4C^2) plus
// the LayerNorm weights (and biases with bias=true); wte V C, wpe block_size C.
// Initialisation as nanoGPT: every Linear and Embedding weight ~ N(0, 0.02), biases 0, the two
// c_proj weights of each block ~ N(0, 0.02 / sqrt(2 n_layer)) (GPT-2's scaled residual init);
// LayerNorm weight 1 (bias 0).
// Parameter names are nanoGPT's ("transformer.h.0.attn.c_attn.weight", ...), so a state dict
// from nanoGPT's model loads by name (lm_head.weight is the tied wte weight and not a key here).
// configure_optimizers: AdamW with two groups, as nanoGPT: weight decay on every parameter of 2 or
// more dims (matmul weights and embeddings), none on 1-D ones (LayerNorm weights, biases).
// Chapter: chapters/12-model-parallelism.md. Reference: karpathy/nanoGPT model.py (GPT, Block,
// CausalSelfAttention, MLP, configure_optimizers); Radford et al., "Language Models are
// Unsupervised Multitask Learners" (GPT-2), 2019.
#pragma once

#include <tinytorch/tinytorch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace examples {

struct GPTConfig {
  int64_t block_size = 64;   ///< the longest context T
  int64_t vocab_size = 65;   ///< Tiny Shakespeare's characters
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  double dropout = 0.0;
  bool bias = false;         ///< biases in Linear and LayerNorm (nanoGPT's default for training: false)
};

/// Multi-head causal self-attention: (B, T, C) -> (B, T, C).
class CausalSelfAttention : public tinytorch::nn::Module {
 public:
  explicit CausalSelfAttention(const GPTConfig& c) : n_head(c.n_head), n_embd(c.n_embd), dropout(c.dropout) {
    TT_CHECK(c.n_embd % c.n_head == 0, "CausalSelfAttention: n_embd (", c.n_embd, ") must be divisible by n_head (",
             c.n_head, ")");
    c_attn = register_module("c_attn", std::make_shared<tinytorch::nn::Linear>(c.n_embd, 3 * c.n_embd, c.bias));
    c_proj = register_module("c_proj", std::make_shared<tinytorch::nn::Linear>(c.n_embd, c.n_embd, c.bias));
    resid_dropout = register_module("resid_dropout", std::make_shared<tinytorch::nn::Dropout>(c.dropout));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor& x) override {
    using namespace tinytorch;
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hs = C / n_head;
    const Tensor qkv = c_attn->forward(x);  // (B, T, 3C)
    auto heads = [&](int64_t i) { return qkv.narrow(2, i * C, C).view({B, T, n_head, hs}).transpose(1, 2); };
    const Tensor q = heads(0), k = heads(1), v = heads(2);  // (B, nh, T, hs)
    const double dropout_p = is_training() ? dropout : 0.0;
    const Tensor y = scaled_dot_product_attention(q, k, v, Tensor(), dropout_p, /*is_causal=*/true);
    return resid_dropout->forward(c_proj->forward(y.transpose(1, 2).contiguous().view({B, T, C})));
  }
  std::string name() const override { return "CausalSelfAttention"; }
  int64_t n_head, n_embd;
  double dropout;
  std::shared_ptr<tinytorch::nn::Linear> c_attn, c_proj;
  std::shared_ptr<tinytorch::nn::Dropout> resid_dropout;
};

/// The feed-forward part: C -> 4C -> gelu -> C.
class MLP : public tinytorch::nn::Module {
 public:
  explicit MLP(const GPTConfig& c) {
    c_fc = register_module("c_fc", std::make_shared<tinytorch::nn::Linear>(c.n_embd, 4 * c.n_embd, c.bias));
    gelu = register_module("gelu", std::make_shared<tinytorch::nn::GELU>());
    c_proj = register_module("c_proj", std::make_shared<tinytorch::nn::Linear>(4 * c.n_embd, c.n_embd, c.bias));
    dropout = register_module("dropout", std::make_shared<tinytorch::nn::Dropout>(c.dropout));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor& x) override {
    return dropout->forward(c_proj->forward(gelu->forward(c_fc->forward(x))));
  }
  std::string name() const override { return "MLP"; }
  std::shared_ptr<tinytorch::nn::Linear> c_fc, c_proj;
  std::shared_ptr<tinytorch::nn::GELU> gelu;
  std::shared_ptr<tinytorch::nn::Dropout> dropout;
};

/// One transformer block (pre-norm): x + attn(ln_1(x)), then + mlp(ln_2(x)).
class Block : public tinytorch::nn::Module {
 public:
  explicit Block(const GPTConfig& c) {
    ln_1 = register_module("ln_1", std::make_shared<tinytorch::nn::LayerNorm>(tinytorch::Shape{c.n_embd}, 1e-5, true, c.bias));
    attn = register_module("attn", std::make_shared<CausalSelfAttention>(c));
    ln_2 = register_module("ln_2", std::make_shared<tinytorch::nn::LayerNorm>(tinytorch::Shape{c.n_embd}, 1e-5, true, c.bias));
    mlp = register_module("mlp", std::make_shared<MLP>(c));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor& x0) override {
    const tinytorch::Tensor x = x0 + attn->forward(ln_1->forward(x0));
    return x + mlp->forward(ln_2->forward(x));
  }
  std::string name() const override { return "Block"; }
  std::shared_ptr<tinytorch::nn::LayerNorm> ln_1, ln_2;
  /// A CausalSelfAttention and an MLP; gpt_tp.hpp's parallelize_gpt puts their tensor-parallel
  /// twins here (replace_module), so the members are typed as any module.
  std::shared_ptr<tinytorch::nn::Module> attn, mlp;
};

/// The parts nanoGPT keeps in `transformer` (a ModuleDict there): wte, wpe, drop, h, ln_f.
class GPTBody : public tinytorch::nn::Module {
 public:
  explicit GPTBody(const GPTConfig& c) {
    wte = register_module("wte", std::make_shared<tinytorch::nn::Embedding>(c.vocab_size, c.n_embd));
    wpe = register_module("wpe", std::make_shared<tinytorch::nn::Embedding>(c.block_size, c.n_embd));
    drop = register_module("drop", std::make_shared<tinytorch::nn::Dropout>(c.dropout));
    h = register_module("h", std::make_shared<tinytorch::nn::Sequential>());
    for (int64_t i = 0; i < c.n_layer; ++i) blocks.push_back(h->register_module(std::to_string(i), std::make_shared<Block>(c)));
    ln_f = register_module("ln_f", std::make_shared<tinytorch::nn::LayerNorm>(tinytorch::Shape{c.n_embd}, 1e-5, true, c.bias));
  }
  tinytorch::Tensor forward(const tinytorch::Tensor&) override {
    throw tinytorch::Error("GPTBody: call GPT::forward, which runs these parts in order");
  }
  std::string name() const override { return "GPTBody"; }
  std::shared_ptr<tinytorch::nn::Embedding> wte, wpe;
  std::shared_ptr<tinytorch::nn::Dropout> drop;
  std::shared_ptr<tinytorch::nn::Sequential> h;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<tinytorch::nn::LayerNorm> ln_f;
};

class GPT : public tinytorch::nn::Module {
 public:
  GPTConfig config;
  std::shared_ptr<GPTBody> transformer;

  explicit GPT(const GPTConfig& c, tinytorch::Generator* gen = nullptr) : config(c) {
    TT_CHECK(c.vocab_size > 0 && c.block_size > 0 && c.n_layer > 0 && c.n_head > 0 && c.n_embd > 0,
             "GPT: every size in the config must be positive");
    transformer = register_module("transformer", std::make_shared<GPTBody>(c));
    // nanoGPT's _init_weights, then the scaled init of the residual projections.
    tinytorch::NoGradGuard ng;
    auto ends_with = [](const std::string& s, const std::string& tail) {
      return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    for (auto& [name, p] : named_parameters()) {
      if (name.find(".ln_") != std::string::npos) continue;  // LayerNorm: weight 1, bias 0 as constructed
      if (ends_with(name, ".bias")) {
        p.zero_();
      } else {
        const double std = ends_with(name, "c_proj.weight") ? 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer)) : 0.02;
        tinytorch::nn::init::normal_(p, 0.0, std, gen);
      }
    }
  }

  /// idx (B, T) int64 -> logits (B, T, vocab_size). Throws when T exceeds block_size.
  tinytorch::Tensor forward(const tinytorch::Tensor& idx) override {
    using namespace tinytorch;
    TT_CHECK(idx.dim() == 2, "GPT: expected idx of shape (B, T), got ", shape_str(idx.sizes()));
    const int64_t T = idx.size(1);
    TT_CHECK(T <= config.block_size, "GPT: Cannot forward sequence of length ", T, ", block size is only ",
             config.block_size);
    const Tensor pos = arange(T).to(idx.device());
    Tensor x = transformer->drop->forward(transformer->wte->forward(idx) + transformer->wpe->forward(pos));
    for (auto& block : transformer->blocks) x = block->forward(x);
    x = transformer->ln_f->forward(x);
    return matmul(x, transformer->wte->weight.t());  // the tied output head: (B, T, C) @ (C, V)
  }
  /// The mean cross-entropy of next-token prediction: logits (B, T, V) against targets (B, T).
  tinytorch::Tensor loss(const tinytorch::Tensor& logits, const tinytorch::Tensor& targets) const {
    const int64_t V = logits.size(2);
    return tinytorch::cross_entropy(logits.reshape({-1, V}), targets.reshape({-1}));
  }

  /// The number of parameters (the tied head counted once; nanoGPT's get_num_params also leaves
  /// out the position embeddings when non_embedding).
  int64_t num_params(bool non_embedding = true) const {
    int64_t n = 0;
    for (const auto& p : parameters()) n += p.numel();
    if (non_embedding) n -= transformer->wpe->weight.numel();
    return n;
  }

  /// AdamW with nanoGPT's two groups (configure_adamw).
  std::unique_ptr<tinytorch::optim::AdamW> configure_optimizers(double weight_decay, double learning_rate,
                                                                std::pair<double, double> betas) const;

  std::string name() const override { return "GPT"; }
};

/// AdamW with nanoGPT's two groups: weight decay on parameters of >= 2 dims (matrices and
/// embeddings), 0 on the others (LayerNorm weights, biases). For a whole GPT or a part of one
/// (a pipeline stage, gpt_pp.hpp).
inline std::unique_ptr<tinytorch::optim::AdamW> configure_adamw(const std::vector<tinytorch::Tensor>& params,
                                                                double weight_decay, double learning_rate,
                                                                std::pair<double, double> betas) {
  std::vector<tinytorch::Tensor> decay, no_decay;
  for (const auto& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto opt = std::make_unique<tinytorch::optim::AdamW>(
      decay, tinytorch::optim::AdamWOptions{learning_rate, betas, 1e-8, weight_decay, false});
  if (!no_decay.empty())
    opt->add_param_group(no_decay, tinytorch::optim::AdamWOptions{learning_rate, betas, 1e-8, 0.0, false});
  return opt;
}

inline std::unique_ptr<tinytorch::optim::AdamW> GPT::configure_optimizers(double weight_decay, double learning_rate,
                                                                          std::pair<double, double> betas) const {
  return configure_adamw(parameters(), weight_decay, learning_rate, betas);
}

/// nanoGPT's learning-rate schedule (train.py get_lr): linear warmup from 0 to learning_rate over
/// warmup_iters, then cosine decay to min_lr at lr_decay_iters, min_lr after.
///   it < warmup:  lr * it / warmup
///   else:         min_lr + 0.5 (1 + cos(pi (it - warmup) / (decay - warmup))) (lr - min_lr)
inline double gpt_lr(int64_t it, double learning_rate, double min_lr, int64_t warmup_iters, int64_t lr_decay_iters) {
  if (it < warmup_iters) return learning_rate * static_cast<double>(it) / static_cast<double>(warmup_iters);
  if (it > lr_decay_iters) return min_lr;
  const double ratio = static_cast<double>(it - warmup_iters) / static_cast<double>(lr_decay_iters - warmup_iters);
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (learning_rate - min_lr);
}

}  // namespace examples
