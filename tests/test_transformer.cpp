// tests/test_transformer.cpp — the transformer's parts: gelu (exact and tanh), embedding
// (padding_idx), matmul with 4-D and broadcast batch dims, dropout as a function,
// scaled_dot_product_attention (plain, causal, int64 0/1 and float masks, scale), nn::GELU and
// nn::Embedding. Each: values and gradients against PyTorch, gradcheck in float64, grad_fn names,
// and the errors PyTorch raises (or ours, where the docstring says we differ).
// Headers under test: functional.hpp (gelu, embedding, dropout, scaled_dot_product_attention,
// matmul), autograd/functions/{elementwise,embedding}.hpp, ops/embedding.hpp,
// backend/cpu/embedding.hpp, nn/embedding.hpp, nn/activation.hpp.
// Reference numbers: tests/reference/transformer_ref.hpp (tests/reference/gen_transformer.py;
// scaled_dot_product_attention by the formula of PyTorch 2.x's documentation, as 1.13 lacks it).
// Tag: [transformer]. Chapter: chapters/12-model-parallelism.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>

#include <tinytorch/tinytorch.hpp>

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
  for (const char* name : {"plain", "causal", "causal_wide", "boolmask", "floatmask", "scale"}) {
    const std::string p = std::string("sdpa.") + name;
    INFO(p);
    Tensor q = leaf(p + ".q"), k = leaf(p + ".k"), v = leaf(p + ".v");
    Tensor mask;
    if (std::string(name) == "boolmask") mask = from_ref(p + ".mask", kInt64);
    if (std::string(name) == "floatmask") mask = from_ref(p + ".mask");
    const bool causal = std::string(name).rfind("causal", 0) == 0;
    const std::optional<double> scale = std::string(name) == "scale" ? std::optional<double>(0.3) : std::nullopt;
    Tensor y = scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale);
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
