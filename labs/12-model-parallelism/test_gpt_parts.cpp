// labs/12-model-parallelism/test_gpt_parts.cpp — the checks of lab 12, one Catch2 tag per task.
//
// References: reference.hpp, written by gen_reference.py with PyTorch (F.gelu's tanh form and its
// gradient; F.embedding's weight gradient with and without padding_idx; nanoGPT's causal
// self-attention and the gradients of its input and two weights); gradcheck (finite differences)
// for GeluTanh; the causal property checked directly (a change of a later position leaves the
// earlier outputs alone). The splitting tasks are checked against what they must equal: the
// shards by the indices they hold, the tensor-parallel MLP against the unsplit one (values and
// gradients, float64), the 1F1B order against its definition and its activation bound.
#include <catch2/catch.hpp>

#include "lab.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace tt = tinytorch;

namespace {

tt::Tensor make(const std::vector<double>& v, tt::Shape shape, tt::DType dtype = tt::kFloat64, bool grad = false) {
  return tt::tensor(v, shape, tt::TensorOptions(dtype).requires_grad(grad));
}

void expect_close(const std::string& what, const tt::Tensor& got, const std::vector<double>& want, double rtol,
                  double atol) {
  if (!got.defined()) {
    FAIL_CHECK(what << ": undefined (no gradient reached it)");
    return;
  }
  const std::vector<double> g = got.contiguous().tolist<double>();
  std::ostringstream os;
  os.precision(17);
  if (g.size() != want.size()) {
    os << what << ": " << g.size() << " values, expected " << want.size() << " (shape " << tt::shape_str(got.sizes())
       << ")";
    FAIL_CHECK(os.str());
    return;
  }
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - want[i]) <= rtol * std::abs(want[i]) + atol)) {
      os << what << "[" << i << "] = " << g[i] << ", PyTorch gives " << want[i];
      FAIL_CHECK(os.str());
      return;
    }
  SUCCEED(what);
}

}  // namespace

TEST_CASE("GeluTanh: PyTorch's gelu(approximate='tanh') and its gradient, and gradcheck", "[task:gelu]") {
  const tt::Tensor x = make(lab12_ref::gelu_x, {9}, tt::kFloat64, true);
  const tt::Tensor y = lab12::GeluTanh::apply(x);
  expect_close("GeluTanh(x)", y, lab12_ref::gelu_y, 1e-12, 1e-14);
  (y * make(lab12_ref::gelu_w, {9})).sum().backward();
  expect_close("d sum(GeluTanh(x) * w)/dx", x.grad(), lab12_ref::gelu_grad, 1e-10, 1e-12);
  tt::Tensor x2 = tt::randn({2, 3}, tt::kFloat64).requires_grad_();
  CHECK(tt::autograd::gradcheck([](const std::vector<tt::Tensor>& v) { return lab12::GeluTanh::apply(v[0]); }, {x2}));
}

TEST_CASE("embedding_backward: PyTorch's weight gradient, repeated indices summed, padding row 0",
          "[task:embedding_backward]") {
  const tt::Tensor idx = make(lab12_ref::emb_idx, {2, 5}, tt::kInt64);
  const tt::Tensor dy = make(lab12_ref::emb_g, {2, 5, 3}, tt::kFloat32);
  const tt::Tensor with_pad = lab12::embedding_backward(idx, dy, 6, 4);
  REQUIRE(with_pad.defined());
  CHECK(with_pad.sizes() == tt::Shape{6, 3});
  expect_close("dW with padding_idx 4 (row 4 stays 0; row 1 sums 4 rows of dy)", with_pad, lab12_ref::emb_grad_pad,
               0, 0);
  expect_close("dW without padding_idx", lab12::embedding_backward(idx, dy, 6, -1), lab12_ref::emb_grad_nopad, 0, 0);
  // a row no index names is 0, even in a table larger than the indices reach
  const tt::Tensor big = lab12::embedding_backward(idx, dy, 9, -1);
  CHECK(big.narrow(0, 6, 3).abs().sum().item() == 0.0);
}

TEST_CASE("causal_self_attention: nanoGPT's attention, its output and three gradients", "[task:causal_attention]") {
  const tt::Tensor x = make(lab12_ref::att_x, {2, 5, 8}, tt::kFloat64, true);
  const tt::Tensor wa = make(lab12_ref::att_w_attn, {24, 8}, tt::kFloat64, true);
  const tt::Tensor wp = make(lab12_ref::att_w_proj, {8, 8}, tt::kFloat64, true);
  const tt::Tensor y = lab12::causal_self_attention(x, wa, wp, 2);
  REQUIRE(y.defined());
  CHECK(y.sizes() == tt::Shape{2, 5, 8});
  expect_close("causal_self_attention(x)", y, lab12_ref::att_y, 1e-10, 1e-12);
  REQUIRE(y.requires_grad());
  (y * make(lab12_ref::att_g, {2, 5, 8})).sum().backward();
  expect_close("d/dx", x.grad(), lab12_ref::att_grad_x, 1e-9, 1e-12);
  expect_close("d/dw_attn", wa.grad(), lab12_ref::att_grad_w_attn, 1e-9, 1e-12);
  expect_close("d/dw_proj", wp.grad(), lab12_ref::att_grad_w_proj, 1e-9, 1e-12);
  // causal: changing the last position changes no earlier output
  tt::Tensor x2 = x.detach().clone();
  {
    tt::NoGradGuard ng;
    x2.narrow(1, 4, 1).add_(1.0);
  }
  const tt::Tensor y2 = lab12::causal_self_attention(x2, wa.detach(), wp.detach(), 2);
  CHECK((y2 - y.detach()).narrow(1, 0, 4).abs().max().item() == 0.0);
  CHECK((y2 - y.detach()).narrow(1, 4, 1).abs().max().item() > 0.0);
}

TEST_CASE("column_shard and row_shard keep rank r's rows (by sections) or columns", "[task:tp_shards]") {
  // w[i][j] = 10 i + j: each element names its row and column.
  const tt::Tensor w = (tt::arange(12).unsqueeze(1) * 10 + tt::arange(4).unsqueeze(0)).to(tt::kFloat64);  // (12, 4)
  const tt::Tensor c = lab12::column_shard(w, 2, 1, 1);
  REQUIRE(c.sizes() == tt::Shape{6, 4});
  CHECK(c.select(1, 0).tolist<double>() == std::vector<double>{60, 70, 80, 90, 100, 110});  // rows 6..11
  // Three sections (q | k | v of 4 rows each), 2 ranks: rank 1 keeps rows 2-3, 6-7, 10-11.
  const tt::Tensor qkv = lab12::column_shard(w, 2, 1, 3);
  REQUIRE(qkv.sizes() == tt::Shape{6, 4});
  CHECK(qkv.select(1, 0).tolist<double>() == std::vector<double>{20, 30, 60, 70, 100, 110});
  const tt::Tensor rs = lab12::row_shard(w, 4, 2);  // columns 2 of 4, for 4 ranks
  REQUIRE(rs.sizes() == tt::Shape{12, 1});
  CHECK(rs.select(0, 5).tolist<double>() == std::vector<double>{52});
  CHECK(rs.is_contiguous());
  CHECK(qkv.is_contiguous());
}

TEST_CASE("tensor_parallel_mlp equals the unsplit MLP, gradients included", "[task:tp_mlp]") {
  tt::manual_seed(3);
  const int64_t C = 8;
  for (int64_t P : {1, 2, 4}) {
    INFO("P = " << P);
    const tt::Tensor x = tt::randn({2, 3, C}, tt::kFloat64).requires_grad_();
    const tt::Tensor w_fc = tt::randn({4 * C, C}, tt::kFloat64).requires_grad_();
    const tt::Tensor w_proj = tt::randn({C, 4 * C}, tt::kFloat64).requires_grad_();
    const tt::Tensor y = lab12::tensor_parallel_mlp(x, w_fc, w_proj, P);
    const tt::Tensor x2 = x.detach().clone().requires_grad_();
    const tt::Tensor w_fc2 = w_fc.detach().clone().requires_grad_();
    const tt::Tensor w_proj2 = w_proj.detach().clone().requires_grad_();
    const tt::Tensor whole = tt::matmul(tt::gelu(tt::matmul(x2, w_fc2.t())), w_proj2.t());
    REQUIRE(y.sizes() == whole.sizes());
    expect_close("tensor_parallel_mlp(x)", y, whole.detach().reshape({-1}).tolist<double>(), 1e-12, 1e-12);
    const tt::Tensor g = tt::randn({2, 3, C}, tt::kFloat64);
    (y * g).sum().backward();
    (whole * g).sum().backward();
    expect_close("d/dx", x.grad(), x2.grad().reshape({-1}).tolist<double>(), 1e-12, 1e-12);
    expect_close("d/dw_fc", w_fc.grad(), w_fc2.grad().reshape({-1}).tolist<double>(), 1e-12, 1e-12);
    expect_close("d/dw_proj", w_proj.grad(), w_proj2.grad().reshape({-1}).tolist<double>(), 1e-12, 1e-12);
  }
}

TEST_CASE("one_f_one_b: warm-up forwards, one forward one backward, cool-down", "[task:one_f_one_b]") {
  CHECK(lab12::one_f_one_b(4, 4, 1) == std::vector<std::string>{"F0", "F1", "F2", "B0", "F3", "B1", "B2", "B3"});
  CHECK(lab12::one_f_one_b(4, 4, 3) == std::vector<std::string>{"F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"});
  CHECK(lab12::one_f_one_b(8, 2, 0) == std::vector<std::string>{"F0", "F1", "B0", "B1"});  // fewer than P - 1
  CHECK(lab12::one_f_one_b(1, 3, 0) == std::vector<std::string>{"F0", "B0", "F1", "B1", "F2", "B2"});
  // Every stage of P = 2..4 and M = 1..8: each forward and backward once, each backward after its forward,
  // and at most P - s forwards ahead of the backwards (the activations 1F1B keeps).
  for (int64_t P = 2; P <= 4; ++P)
    for (int64_t M = 1; M <= 8; ++M)
      for (int64_t s = 0; s < P; ++s) {
        INFO("P = " << P << ", M = " << M << ", s = " << s);
        const std::vector<std::string> order = lab12::one_f_one_b(P, M, s);
        REQUIRE(order.size() == static_cast<size_t>(2 * M));
        int64_t f = 0, b = 0, peak = 0;
        for (const std::string& op : order) {
          if (op[0] == 'F') CHECK(op == "F" + std::to_string(f++));
          else CHECK(op == "B" + std::to_string(b++));
          CHECK(b <= f);
          peak = std::max(peak, f - b);
        }
        CHECK(peak == std::min(P - s, M));
      }
}
