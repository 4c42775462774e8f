// tests/test_transformer.cpp — the transformer's parts: gelu (exact and tanh), embedding
// (padding_idx), matmul with 4-D and broadcast batch dims, dropout as a function,
// scaled_dot_product_attention (plain, causal, int64 0/1 and float masks, scale; the fused kernel
// against its naive twin and the composite path, nn::attention::sdpa_kernel), nn::GELU,
// nn::Embedding and nn::MultiheadAttention (tests/reference/mha_ref.hpp from gen_mha.py: PyTorch
// 1.13's module, with masks, batch_first, unbatched). Each: values and gradients against
// PyTorch, gradcheck in float64 (the ops), grad_fn names, and the errors PyTorch raises (or ours,
// where the docstring says we differ).
// Headers under test: functional.hpp (gelu, embedding, dropout, scaled_dot_product_attention,
// matmul), autograd/functions/{elementwise,embedding,attention}.hpp, ops/{embedding,attention}.hpp,
// backend/cpu/{embedding,attention}.hpp, nn/embedding.hpp, nn/activation.hpp, nn/attention.hpp.
// Reference numbers: tests/reference/transformer_ref.hpp (tests/reference/gen_transformer.py;
// scaled_dot_product_attention by the formula of PyTorch 2.x's documentation, as 1.13 lacks it).
// Tag: [transformer]. Chapter: chapters/12-model-parallelism.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include <tinytorch/tinytorch.hpp>
#include <tinytorch/backend/cpu/attention.hpp>  // the fused kernel and its naive twin (internals under test)

#include "reference/mha_ref.hpp"
#include "reference/transformer_ref.hpp"
#include "reference/ref_arrays.hpp"

using namespace tinytorch;
using Catch::Contains;
using Vs = std::vector<Tensor>;

namespace {

const transformer_ref::Array& array(const std::string& name) { return ref_arrays::get(transformer_ref::arrays(), name); }
/// The reference array `name` as a tensor (float32 unless told).
Tensor from_ref(const std::string& name, DType dtype = kFloat32) { return ref_arrays::to_tensor(array(name), dtype); }
Tensor leaf(const std::string& name, DType dtype = kFloat32) { return from_ref(name, dtype).requires_grad_(); }
/// "" when `got` matches the reference array `name` (tests/reference/ref_arrays.hpp); otherwise the first difference.
std::string compare(const Tensor& got, const std::string& name, double rtol = 1e-5, double atol = 1e-6) {
  return ref_arrays::compare(got, array(name), name, rtol, atol);
}

}  // namespace

TEST_CASE("gelu, exact and tanh, matches PyTorch's values and gradients", "[transformer]") {
  for (std::string approx : {"none", "tanh"}) {
    INFO("approximate=" << approx);
    Tensor x = leaf("gelu.x");
    Tensor y = gelu(x, approx);
    CHECK(y.grad_fn()->name() == "GeluBackward0");
    y.backward(from_ref("gelu.gout"));
    CHECK(compare(y, "gelu." + approx + ".y") == "");
    CHECK(compare(x.grad(), "gelu." + approx + ".grad") == "");
    Tensor x64 = (from_ref("gelu.x", kFloat64) * 0.3 + 0.01).detach().requires_grad_();
    CHECK(autograd::gradcheck([&](const Vs& v) { return gelu(v[0], approx); }, {x64}));
    // nn::GELU is the function
    nn::GELU m(approx);
    CHECK(compare(m(from_ref("gelu.x")), "gelu." + approx + ".y") == "");
    CHECK(m.repr() == "GELU(approximate='" + approx + "')");
  }
  REQUIRE_THROWS_WITH(gelu(ones({2}), "fast"), Contains("gelu: approximate argument must be either none or tanh."));
  REQUIRE_THROWS_WITH(nn::GELU("erf"), Contains("approximate argument must be either none or tanh."));
  REQUIRE_THROWS_WITH(gelu(tensor({1, 2}, kInt64)), Contains("\"GeluKernelImpl\" not implemented for 'torch.int64'"));
}

TEST_CASE("embedding matches PyTorch: repeated indices add up, padding_idx gets no gradient", "[transformer]") {
  const Tensor idx = from_ref("emb.idx", kInt64);
  for (auto [tag, pad] : {std::pair<const char*, std::optional<int64_t>>{"nopad", std::nullopt}, {"pad2", 2},
                          {"padm1", -1}}) {
    INFO(tag);
    Tensor w = leaf("emb.weight");
    Tensor y = embedding(idx, w, pad);
    CHECK(y.grad_fn()->name() == "EmbeddingBackward0");
    y.backward(from_ref("emb.gout"));
    CHECK(compare(y, std::string("emb.") + tag + ".y") == "");
    CHECK(compare(w.grad(), std::string("emb.") + tag + ".grad") == "");
  }
  Tensor w64 = from_ref("emb.weight", kFloat64).requires_grad_();
  // (with a padding_idx the lookup reads the padding row, so finite differences see a gradient the
  // definition leaves out: gradcheck fails there in PyTorch too)
  CHECK(autograd::gradcheck([&](const Vs& v) { return embedding(idx, v[0]); }, {w64}));
  // indices get no gradient and need none: a (2, 4) int64 index tensor is not an input of the graph
  CHECK(embedding(idx, from_ref("emb.weight")).grad_fn() == nullptr);

  REQUIRE_THROWS_WITH(embedding(tensor({0, 7}, kInt64), from_ref("emb.weight")),
                      "embedding: index 7 is out of range for a weight of 7 rows (weight shape [7, 3], indices shape "
                      "[2]): indices must be in [0, 7)");
  REQUIRE_THROWS_WITH(embedding(tensor({-1}, kInt64), from_ref("emb.weight")), Contains("index -1 is out of range"));
  REQUIRE_THROWS_WITH(embedding(tensor({0.0, 1.0}), from_ref("emb.weight")),
                      Contains("'indices' to have scalar type int64, but got torch.float32"));
  REQUIRE_THROWS_WITH(embedding(tensor({0}, kInt64), ones({7})), Contains("'weight' must be 2-D"));
  REQUIRE_THROWS_WITH(embedding(tensor({0}, kInt64), ones({7, 3}), 7), Contains("Padding_idx must be within num_embeddings"));
  REQUIRE_THROWS_WITH(embedding(tensor({0}, kInt64), ones({7, 3}), -8), Contains("Padding_idx must be within num_embeddings"));
}

TEST_CASE("nn::Embedding: N(0, 1) init, the padding row zero, repr, clone, errors", "[transformer]") {
  manual_seed(3);
  nn::Embedding e(65, 16, -1);
  CHECK(*e.padding_idx == 64);
  CHECK(e.weight.sizes() == Shape{65, 16});
  CHECK(e.weight.select(0, 64).abs().sum().item() == 0.0);
  const double mean = e.weight.narrow(0, 0, 64).mean().item();
  const double sd = std::sqrt(((e.weight.narrow(0, 0, 64) - mean) * (e.weight.narrow(0, 0, 64) - mean)).mean().item());
  CHECK(std::abs(mean) < 0.1);  // 1024 draws of N(0, 1)
  CHECK(std::abs(sd - 1.0) < 0.1);
  CHECK(e.repr() == "Embedding(65, 16, padding_idx=64)");
  CHECK(nn::Embedding(10, 3).repr() == "Embedding(10, 3)");
  Tensor y = e(tensor({1, 64, 2}, kInt64));
  CHECK(y.sizes() == Shape{3, 16});
  y.sum().backward();
  CHECK(e.weight.grad().select(0, 64).abs().sum().item() == 0.0);
  CHECK(e.weight.grad().select(0, 1).sum().item() == 16.0);
  auto c = std::dynamic_pointer_cast<nn::Embedding>(e.clone());
  REQUIRE(c);
  CHECK(c->weight.data_ptr<float>() != e.weight.data_ptr<float>());
  CHECK(c->parameters().size() == 1);
  REQUIRE_THROWS_WITH(nn::Embedding(0, 3), Contains("num_embeddings and embedding_dim must be positive"));
  REQUIRE_THROWS_WITH(nn::Embedding(5, 3, 5), Contains("Padding_idx must be within num_embeddings"));
}

TEST_CASE("matmul with 4-D operands and broadcast batch dims matches PyTorch", "[transformer]") {
  Tensor a = leaf("mm4.a"), b = leaf("mm4.b");
  Tensor y = matmul(a, b);
  CHECK(y.sizes() == Shape{2, 3, 3, 5});
  y.backward(from_ref("mm4.gout"));
  CHECK(compare(y, "mm4.y") == "");
  CHECK(compare(a.grad(), "mm4.grad_a") == "");
  CHECK(compare(b.grad(), "mm4.grad_b") == "");
  Tensor a64 = from_ref("mm4.a", kFloat64).requires_grad_(), b64 = from_ref("mm4.b", kFloat64).requires_grad_();
  CHECK(autograd::gradcheck([](const Vs& v) { return matmul(v[0], v[1]); }, {a64, b64}));
  // (*, M, K) @ (K, N) folds the batch into one GEMM; (K) @ (B, H, K, N) drops the added dim
  CHECK(matmul(ones({2, 3, 4, 5}), ones({5, 6})).sizes() == Shape{2, 3, 4, 6});
  CHECK(matmul(ones({5}), ones({2, 3, 5, 6})).sizes() == Shape{2, 3, 6});
  CHECK(matmul(ones({2, 3, 4, 5}), ones({5})).sizes() == Shape{2, 3, 4});
  CHECK(matmul(ones({2, 3, 4, 5}), ones({5})).sum().item() == 2 * 3 * 4 * 5);
  // an inner size of 0: zeros of the output's shape, as torch.matmul (a bad-input trial found the
  // batch fold failing here)
  CHECK(matmul(ones({2, 3, 0}), ones({0, 5})).sizes() == Shape{2, 3, 5});
  CHECK(matmul(ones({2, 3, 0}), ones({0, 5})).abs().sum().item() == 0.0);
  CHECK(matmul(ones({2, 3, 0}), ones({0})).sizes() == Shape{2, 3});
}

TEST_CASE("scaled_dot_product_attention matches the documented formula in PyTorch", "[transformer]") {
  using nn::attention::SDPBackend;
  // Each case through the kernel chosen by default (the fused one where it applies) and through MATH.
  const SDPBackend backend = GENERATE(SDPBackend::EFFICIENT_ATTENTION, SDPBackend::MATH);
  for (const char* name : {"plain", "causal", "causal_wide", "boolmask", "floatmask", "scale"}) {
    const std::string p = std::string("sdpa.") + name;
    INFO(p << (backend == SDPBackend::MATH ? " (MATH)" : " (default choice)"));
    std::optional<nn::attention::sdpa_kernel> only_math;
    if (backend == SDPBackend::MATH) only_math.emplace(SDPBackend::MATH);
    Tensor q = leaf(p + ".q"), k = leaf(p + ".k"), v = leaf(p + ".v");
    Tensor mask;
    if (std::string(name) == "boolmask") mask = from_ref(p + ".mask", kInt64);
    if (std::string(name) == "floatmask") mask = from_ref(p + ".mask");
    const bool causal = std::string(name).rfind("causal", 0) == 0;
    const std::optional<double> scale = std::string(name) == "scale" ? std::optional<double>(0.3) : std::nullopt;
    Tensor y = scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale);
    const bool fused = backend != SDPBackend::MATH && !mask.defined();
    CHECK((y.grad_fn()->name() == "ScaledDotProductEfficientAttentionBackward0") == fused);
    y.backward(from_ref(p + ".gout"));
    CHECK(compare(y, p + ".y") == "");
    CHECK(compare(q.grad(), p + ".grad_q") == "");
    CHECK(compare(k.grad(), p + ".grad_k") == "");
    CHECK(compare(v.grad(), p + ".grad_v") == "");
    Tensor q64 = from_ref(p + ".q", kFloat64).requires_grad_(), k64 = from_ref(p + ".k", kFloat64).requires_grad_(),
           v64 = from_ref(p + ".v", kFloat64).requires_grad_();
    const Tensor mask64 = mask.defined() && mask.dtype() != kInt64 ? mask.to(kFloat64) : mask;
    CHECK(autograd::gradcheck(
        [&](const Vs& t) { return scaled_dot_product_attention(t[0], t[1], t[2], mask64, 0.0, causal, scale); },
        {q64, k64, v64}));
  }
}

TEST_CASE("scaled_dot_product_attention: causal rows see only the past; errors name the shapes", "[transformer]") {
  // With v = identity rows, the output row i is the attention row i: zero beyond the diagonal.
  const Tensor q = randn({1, 4, 3}), k = randn({1, 4, 3});
  const Tensor v = (arange(4).unsqueeze(1) == arange(4).unsqueeze(0)).to(kFloat32).unsqueeze(0);  // eye(4)
  const Tensor a = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
  for (int64_t i = 0; i < 4; ++i) {
    double row = 0;
    for (int64_t j = 0; j < 4; ++j) {
      const double w = a.at({0, i, j});
      if (j > i) CHECK(w == 0.0);
      row += w;
    }
    CHECK(row == Approx(1.0));
  }
  CHECK(a.at({0, 0, 0}) == Approx(1.0));  // the first query sees only itself
  // a fully masked row: NaN, as the documented formula (PyTorch 2.5+ gives 0)
  const Tensor none = zeros({4, 4}, kInt64);
  CHECK(std::isnan(scaled_dot_product_attention(q, k, v, none).at({0, 0, 0})));

  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, ones({4, 4}, kInt64), 0.0, true),
                      Contains("Explicit attn_mask should not be set when is_causal=True"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, randn({1, 4, 5}), v),
                      "scaled_dot_product_attention: query and key must have the same last dim E, got query [1, 4, 3], "
                      "key [1, 4, 5], value [1, 4, 4]");
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, randn({1, 5, 4})),
                      Contains("key and value must have the same length S (dim -2)"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(randn({3}), k, v), Contains("need at least 2 dims"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, ones({4, 4}, kFloat64)),
                      Contains("Expected attn_mask dtype to be int64 (a 0/1 mask, PyTorch's bool) or to match query dtype"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, Tensor(), 1.5), Contains("dropout_p has to be between 0 and 1"));
  // the messages name this op's arguments, not an inner matmul's or where's
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k.to(kFloat64), v),
                      Contains("Expected query, key, and value to have the same dtype, but got query.dtype: torch.float32, "
                               "key.dtype: torch.float64"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q.to(kInt64), k.to(kInt64), v.to(kInt64)),
                      Contains("must be floating point, got torch.int64"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(randn({2, 4, 3}), randn({3, 4, 3}), randn({3, 4, 4})),
                      Contains("the batch dims of query, key and value cannot be broadcast together: query [2, 4, 3], "
                               "key [3, 4, 3], value [3, 4, 4]"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, ones({4, 5}, kInt64)),
                      Contains("attn_mask of shape [4, 5] cannot be broadcast to the attention scores' shape [1, 4, 4]"));
}

TEST_CASE("the fused attention kernel equals its naive twin and the composite path; sdpa_kernel chooses", "[transformer]") {
  namespace cpu = backend::cpu;
  using nn::attention::SDPBackend;
  using nn::attention::sdpa_kernel;
  struct Case { int64_t N, L, S, E, Ev; bool causal; };
  // L > S and L < S with causal (top-left aligned), E != Ev, sizes past Eigen's small-product path
  for (const Case c : {Case{3, 5, 7, 4, 6, false}, Case{2, 7, 5, 3, 2, true}, Case{2, 33, 40, 16, 24, true},
                       Case{1, 64, 64, 32, 32, true}, Case{4, 1, 9, 8, 8, false}}) {
    INFO("N " << c.N << " L " << c.L << " S " << c.S << " E " << c.E << " Ev " << c.Ev << " causal " << c.causal);
    manual_seed(3);
    const Tensor q = randn({c.N, c.L, c.E}, kFloat64), k = randn({c.N, c.S, c.E}, kFloat64),
                 v = randn({c.N, c.S, c.Ev}, kFloat64), dout = randn({c.N, c.L, c.Ev}, kFloat64);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.E));
    // the fast CPU kernel against the oracle loops, float64
    Tensor out = empty({c.N, c.L, c.Ev}, kFloat64), out_n = empty({c.N, c.L, c.Ev}, kFloat64);
    Tensor lse = empty({c.N, c.L}, kFloat64), lse_n = empty({c.N, c.L}, kFloat64);
    cpu::attention_kernel(q.data_ptr<double>(), k.data_ptr<double>(), v.data_ptr<double>(), out.data_ptr<double>(),
                          lse.data_ptr<double>(), c.N, c.L, c.S, c.E, c.Ev, scale, c.causal);
    cpu::attention_naive(q.data_ptr<double>(), k.data_ptr<double>(), v.data_ptr<double>(), out_n.data_ptr<double>(),
                         lse_n.data_ptr<double>(), c.N, c.L, c.S, c.E, c.Ev, scale, c.causal);
    CHECK((out - out_n).abs().max().item() < 1e-12);
    CHECK((lse - lse_n).abs().max().item() < 1e-12);
    Vs fast, naive;
    for (Vs* g : {&fast, &naive}) {
      *g = {empty(q.sizes(), kFloat64), empty(k.sizes(), kFloat64), empty(v.sizes(), kFloat64)};
      auto bw = g == &fast ? cpu::attention_backward_kernel<double> : cpu::attention_backward_naive<double>;
      bw(dout.data_ptr<double>(), q.data_ptr<double>(), k.data_ptr<double>(), v.data_ptr<double>(),
         out.data_ptr<double>(), lse.data_ptr<double>(), (*g)[0].data_ptr<double>(), (*g)[1].data_ptr<double>(),
         (*g)[2].data_ptr<double>(), c.N, c.L, c.S, c.E, c.Ev, scale, c.causal);
    }
    for (int i = 0; i < 3; ++i) CHECK((fast[i] - naive[i]).abs().max().item() < 1e-12);

    // through scaled_dot_product_attention, float32: the fused node against MATH
    const Tensor q32 = q.to(kFloat32).requires_grad_(), k32 = k.to(kFloat32).requires_grad_(),
                 v32 = v.to(kFloat32).requires_grad_();
    Tensor y_fused = scaled_dot_product_attention(q32, k32, v32, Tensor(), 0.0, c.causal);
    CHECK(y_fused.grad_fn()->name() == "ScaledDotProductEfficientAttentionBackward0");
    y_fused.backward(dout.to(kFloat32));
    const Vs g_fused = {q32.grad().clone(), k32.grad().clone(), v32.grad().clone()};
    for (const Tensor& t : {q32, k32, v32}) t.grad().zero_();
    Tensor y_math;
    {
      sdpa_kernel only(SDPBackend::MATH);
      y_math = scaled_dot_product_attention(q32, k32, v32, Tensor(), 0.0, c.causal);
    }
    CHECK(y_math.grad_fn()->name() != "ScaledDotProductEfficientAttentionBackward0");
    y_math.backward(dout.to(kFloat32));
    CHECK((y_fused - y_math).abs().max().item() < 1e-5);
    CHECK((g_fused[0] - q32.grad()).abs().max().item() < 1e-5);
    CHECK((g_fused[1] - k32.grad()).abs().max().item() < 1e-5);
    CHECK((g_fused[2] - v32.grad()).abs().max().item() < 1e-5);
  }
  // gradcheck through the fused node, float64, 4-D (B, H, T, hd) inputs taken as views
  const Tensor qkv = randn({2, 5, 3, 2, 4}, kFloat64).requires_grad_();
  CHECK(autograd::gradcheck(
      [&](const Vs& t) {
        const Tensor x = t[0].transpose(1, 3);  // (2, 2, 3, 5, 4): non-contiguous q, k, v
        return scaled_dot_product_attention(x.select(2, 0), x.select(2, 1), x.select(2, 2), Tensor(), 0.0, true);
      },
      {qkv}));

  // sdpa_kernel: EFFICIENT_ATTENTION alone refuses what it cannot run, naming why; guards nest
  const Tensor q = randn({2, 4, 3}), k = randn({2, 4, 3}), v = randn({2, 4, 3});
  {
    sdpa_kernel only(SDPBackend::EFFICIENT_ATTENTION);
    CHECK(scaled_dot_product_attention(q, k, v).sizes() == Shape{2, 4, 3});
    REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, ones({4, 4}, kInt64)),
                        "scaled_dot_product_attention: No available kernel: sdpa_kernel allows only "
                        "EFFICIENT_ATTENTION, which cannot run this call: an attn_mask is given (is_causal is "
                        "supported) (query [2, 4, 3], key [2, 4, 3], value [2, 4, 3])");
    REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k.select(0, 0), v), Contains("different batch dims"));
    REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, Tensor(), 0.5), Contains("dropout_p > 0"));
    REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, randn({2, 0, 3}), randn({2, 0, 3})), Contains("S is 0"));
    {
      sdpa_kernel inner({SDPBackend::MATH});
      CHECK(sdpa_kernel::enabled().math);
      CHECK(!sdpa_kernel::enabled().efficient);
    }
    CHECK(!sdpa_kernel::enabled().math);  // restored
  }
  CHECK(sdpa_kernel::enabled().math);
  CHECK(sdpa_kernel::enabled().efficient);
  REQUIRE_THROWS_WITH(sdpa_kernel(std::vector<SDPBackend>{}), "sdpa_kernel: expected at least one SDPBackend");
  // the cases the fused kernel skips still run (the composite): S = 0 gives zeros, as matmul;
  // E = 0 gives every row the mean of v (all scores 0), as the composite (a bad-input trial found
  // the fused path returning uninitialised memory there)
  CHECK(scaled_dot_product_attention(q, randn({2, 0, 3}), randn({2, 0, 3})).abs().sum().item() == 0.0);
  const Tensor v2 = tensor({1.0, 2.0, 3.0, 5.0}, {1, 2, 2});
  const Tensor e0 = scaled_dot_product_attention(randn({1, 3, 0}), randn({1, 2, 0}), v2, Tensor(), 0.0, false, 1.0);
  CHECK(e0.tolist<double>() == std::vector<double>{2, 3.5, 2, 3.5, 2, 3.5});
}

namespace {
const mha_ref::Array& mha_array(const std::string& name) { return ref_arrays::get(mha_ref::arrays(), name); }
Tensor mha_tensor(const std::string& name, DType dtype = kFloat32) { return ref_arrays::to_tensor(mha_array(name), dtype); }
std::string mha_compare(const Tensor& got, const std::string& name) {
  return ref_arrays::compare(got, mha_array(name), name, 1e-5, 1e-6);
}
/// nn::MultiheadAttention(8, 2, ...) with gen_mha.py's parameters.
std::shared_ptr<nn::MultiheadAttention> reference_mha(bool batch_first = false) {
  auto m = std::make_shared<nn::MultiheadAttention>(8, 2, 0.0, true, false, false, std::nullopt, std::nullopt,
                                                       batch_first);
  std::vector<std::pair<std::string, Tensor>> sd;
  for (const char* n : {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"})
    sd.emplace_back(n, mha_tensor(std::string("mha.param.") + n));
  m->load_state_dict(sd);
  return m;
}
}  // namespace

TEST_CASE("nn::MultiheadAttention matches PyTorch's: outputs, weights, every gradient", "[transformer]") {
  for (const char* name : {"self", "cross", "masks", "floatmask", "batch_first", "unbatched"}) {
    const std::string c = name, p = "mha." + c + ".";
    INFO(c);
    auto m = reference_mha(c == "batch_first");
    Tensor q = mha_tensor(p + "query").requires_grad_();
    const bool self_attn = c == "self";
    Tensor k = self_attn ? q : mha_tensor(p + "key").requires_grad_();
    Tensor v = self_attn ? q : mha_tensor(p + "value").requires_grad_();
    Tensor attn_mask, kpm;
    bool need_weights = true, average = true;
    if (c == "masks") {
      attn_mask = mha_tensor(p + "attn_mask", kInt64);  // PyTorch's bool: 1 = may not attend
      kpm = mha_tensor(p + "key_padding_mask", kInt64);
    }
    if (c == "floatmask") attn_mask = mha_tensor(p + "attn_mask"), need_weights = false;
    if (c == "unbatched") kpm = mha_tensor(p + "key_padding_mask", kInt64);
    if (c == "cross") average = false;
    auto [out, weights] = m->forward(q, k, v, kpm, need_weights, attn_mask, average);
    CHECK(mha_compare(out, p + "out") == "");
    if (need_weights) CHECK(mha_compare(weights, p + "weights") == "");
    else CHECK(!weights.defined());
    out.backward(mha_tensor(p + "gout"));
    CHECK(mha_compare(q.grad(), p + "grad_query") == "");
    if (!self_attn) {
      CHECK(mha_compare(k.grad(), p + "grad_key") == "");
      CHECK(mha_compare(v.grad(), p + "grad_value") == "");
    }
    for (const auto& [pn, param] : m->named_parameters()) CHECK(mha_compare(param.grad(), p + "grad." + pn) == "");
  }
}

// (No gradcheck of the module: it is a composite of ops that each pass one; its gradients are
// compared with PyTorch's above, every parameter's included.)
TEST_CASE("nn::MultiheadAttention: init, the fused path, clone, errors", "[transformer]") {
  manual_seed(0);
  nn::MultiheadAttention m(16, 4);
  // PyTorch's init: in_proj_weight xavier_uniform_ (bound sqrt(6 / (16 + 48))), biases 0
  const double bound = std::sqrt(6.0 / 64.0);
  CHECK(m.in_proj_weight.abs().max().item() <= bound);
  CHECK(m.in_proj_weight.abs().max().item() > 0.9 * bound);
  CHECK(m.in_proj_bias.abs().sum().item() == 0.0);
  CHECK(m.out_proj->bias.abs().sum().item() == 0.0);
  std::vector<std::string> names;
  for (const auto& [n, t] : m.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});

  // without weights and masks the heads take the fused kernel, and give the explicit path's numbers
  const Tensor x = randn({5, 2, 16});
  auto [y_weights, w] = m.forward(x, x, x);
  CHECK(w.sizes() == Shape{2, 5, 5});
  const Tensor y = m.forward(x);  // the Module form: self-attention, output only
  CHECK((y - y_weights).abs().max().item() < 1e-6);
  {  // need_weights = false runs the heads through the fused kernel: allowed alone, it still runs
    nn::attention::sdpa_kernel only(nn::attention::SDPBackend::EFFICIENT_ATTENTION);
    auto [yf, none] = m.forward(x, x, x, Tensor(), false);
    CHECK(!none.defined());
    CHECK((yf - y_weights).abs().max().item() < 1e-6);
  }

  // clone: its own tensors, the same numbers
  auto c = std::dynamic_pointer_cast<nn::MultiheadAttention>(m.clone());
  REQUIRE(c);
  CHECK(c->in_proj_weight.data_ptr<float>() != m.in_proj_weight.data_ptr<float>());
  CHECK((c->forward(x) - y).abs().max().item() == 0.0);

  REQUIRE_THROWS_WITH(nn::MultiheadAttention(10, 3), "MultiheadAttention: embed_dim must be divisible by num_heads (got 10 and 3)");
  REQUIRE_THROWS_WITH(nn::MultiheadAttention(8, 2, 1.5), Contains("dropout probability has to be between 0 and 1"));
  REQUIRE_THROWS_WITH(nn::MultiheadAttention(8, 2, 0.0, true, true), Contains("add_bias_kv and add_zero_attn are not implemented"));
  REQUIRE_THROWS_WITH(nn::MultiheadAttention(8, 2, 0.0, true, false, false, 4),
                      "MultiheadAttention: kdim and vdim other than embed_dim (8) are not implemented, got kdim 4, vdim 8");
  REQUIRE_THROWS_WITH(m.forward(randn({5, 2, 8})), "MultiheadAttention: was expecting embedding dimension of 16, but got 8 (query [5, 2, 8])");
  REQUIRE_THROWS_WITH(m.forward(x, randn({4, 2, 16}), randn({3, 2, 16})),
                      Contains("key shape [4, 2, 16] does not match value shape [3, 2, 16]"));
  REQUIRE_THROWS_WITH(m.forward(x, randn({4, 3, 16}), randn({4, 3, 16})), Contains("the same batch size"));
  REQUIRE_THROWS_WITH(m.forward(randn({16}), randn({16}), randn({16})), Contains("all 2-D (unbatched) or all 3-D"));
  REQUIRE_THROWS_WITH(m.forward(x, x, x, Tensor(), true, ones({5, 4}, kInt64)),
                      "MultiheadAttention: The shape of the attn_mask is [5, 4], but should be [5, 5] or [8, 5, 5] "
                      "(L, S) or (N*num_heads, L, S)");
  REQUIRE_THROWS_WITH(m.forward(x, x, x, ones({5, 2}, kInt64)),
                      "MultiheadAttention: expecting key_padding_mask shape of [2, 5], but got [5, 2]");
  const Tensor x2 = randn({5, 16});  // unbatched: the mask is (S)
  REQUIRE_THROWS_WITH(m.forward(x2, x2, x2, ones({1, 5}, kInt64)),
                      "MultiheadAttention: expecting key_padding_mask shape of [5], but got [1, 5]");
  REQUIRE_THROWS_WITH(m.forward(x.to(kFloat64)),
                      "MultiheadAttention: expected query, key and value of the parameters' dtype torch.float32, got "
                      "torch.float64 (query [5, 2, 16])");
  REQUIRE_THROWS_WITH(m.forward(x, x, x, Tensor(), true, ones({5, 5}, kFloat64)),
                      Contains("attn_mask must be int64 (a 0/1 mask, PyTorch's bool: 1 = may not attend) or of the "
                               "query's dtype torch.float32, got torch.float64"));
}

TEST_CASE("dropout as a function: inverted scaling, identity in eval, nn::Dropout calls it", "[transformer]") {
  Generator g1(7), g2(7);
  const Tensor x = ones({1000});
  const Tensor y = dropout(x, 0.25, true, &g1);
  const auto v = y.tolist<double>();
  int64_t zeros_seen = 0;
  for (double e : v) {
    CHECK((e == 0.0 || e == Approx(1.0 / 0.75)));
    zeros_seen += e == 0.0;
  }
  CHECK(zeros_seen > 200);
  CHECK(zeros_seen < 300);
  nn::Dropout d(0.25, &g2);
  CHECK(d(x).tolist<double>() == v);  // the same draws from the same seed
  CHECK(dropout(x, 0.25, false).data_ptr<float>() == x.data_ptr<float>());
  CHECK(dropout(x, 1.0).sum().item() == 0.0);
  REQUIRE_THROWS_WITH(dropout(x, 1.5), Contains("dropout probability has to be between 0 and 1, but got 1.5"));
  REQUIRE_THROWS_WITH(dropout(ones({3}, kInt64), 0.5), Contains("dropout: expected a floating point tensor in training, got torch.int64"));
}
