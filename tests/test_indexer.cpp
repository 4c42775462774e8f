// tests/test_indexer.cpp — backend/indexer.hpp (the index-math struct of both backends) and
// backend/functors.hpp (the per-element functions shared by the CPU loops and the CUDA kernels).
//
// What it checks:
//   * the two walks of an Indexer agree: Indexer::offset(k, i) (what a CUDA thread computes from
//     i alone) equals the offset the CPU's incremental loop (backend::cpu::strided_loop) carries
//     to element i, for every element, on contiguous, broadcast (stride 0), transposed, sliced
//     (offset strides), 0-dim, size-1, empty and 25-dim shapes, including odd sizes (1, 7, 33,
//     129); the loop visits each element once, in order, and gives a missing operand offset 0;
//   * errors: 26 dims ("tensors of at most 25 dimensions are supported, got 26"), 0 or 4
//     operands, strides of the wrong rank, each naming the op;
//   * the functors moved to namespace tinytorch::backend keep their backend::cpu names (the
//     same types), and still compute the same values (spot checks; the ops tests cover them).
// Chapter: chapters/10-gpu-kernels.md. Catch2 tags: [backend][indexer], [backend][functors].
#include <catch2/catch.hpp>

#include <tinytorch/backend/cpu/elementwise.hpp>
#include <tinytorch/backend/indexer.hpp>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

using tinytorch::Shape;
using tinytorch::Strides;
using tinytorch::backend::Indexer;
namespace cpu = tinytorch::backend::cpu;

namespace {

// Every element's offsets from Indexer::offset against cpu::strided_loop (two operands).
void check_two(const Shape& shape, const Strides& sa, const Strides& sb) {
  const Indexer ix = Indexer::make(shape, {sa, sb}, "test");
  int64_t visited = 0;
  cpu::strided_loop(ix, [&](int64_t i, int64_t oa, int64_t ob, int64_t oc) {
    INFO("shape " << tinytorch::shape_str(shape) << ", element " << i);
    CHECK(i == visited);  // in order, each once
    CHECK(ix.offset(0, i) == oa);
    CHECK(ix.offset(1, i) == ob);
    CHECK(oc == 0);       // no third operand
    ++visited;
  });
  CHECK(visited == ix.numel);
}

}  // namespace

TEST_CASE("Indexer: offsets match the CPU strided loop", "[backend][indexer]") {
  SECTION("contiguous, odd sizes") {
    for (int64_t n : {1, 7, 33, 129}) check_two({n}, {1}, {1});
    check_two({7, 33}, {33, 1}, {33, 1});
  }
  SECTION("broadcast: stride 0") {
    check_two({3, 1, 5}, {5, 5, 1}, {0, 0, 1});      // b: (5,) broadcast to (3, 1, 5)
    check_two({7, 33}, {33, 1}, {1, 0});              // b: (7, 1) broadcast along dim 1
    check_two({4, 129}, {0, 0}, {129, 1});            // a scalar broadcast
  }
  SECTION("transposed and sliced views") {
    check_two({4, 3}, {1, 4}, {3, 1});                // a: the transpose of a (3, 4)
    check_two({5, 7}, {14, 2}, {1, 5});               // a: x[::2, ::2] of a (10, 14); b: transposed
    check_two({2, 3, 4}, {1, 2, 6}, {12, 4, 1});      // a: permute(2, 1, 0) of a (4, 3, 2)
  }
  SECTION("0-dim, empty, size-1 dims") {
    check_two({}, {}, {});
    const Indexer scalar = Indexer::make({}, {Strides{}}, "test");
    CHECK(scalar.ndim == 0);
    CHECK(scalar.numel == 1);
    CHECK(scalar.offset(0, 0) == 0);
    const Indexer empty = Indexer::make({2, 0, 3}, {Strides{0, 3, 1}}, "test");
    CHECK(empty.numel == 0);
    check_two({1, 1, 1}, {1, 1, 1}, {0, 0, 0});
  }
  SECTION("8 dims") {
    const Shape shape{2, 1, 3, 2, 1, 2, 3, 2};
    Strides dense(8, 1), strided(8, 0);
    for (int d = 6; d >= 0; --d) dense[d] = dense[d + 1] * shape[d + 1];
    for (int d = 0; d < 8; ++d) strided[d] = (d % 2) ? 0 : 7 * (d + 1);  // broadcast + gaps
    check_two(shape, dense, strided);
    CHECK(Indexer::make(shape, {dense}, "test").numel == 144);
  }
  SECTION("25 dims, the most a loop takes") {
    Shape shape(25, 1);
    for (int d : {0, 5, 11, 17, 24}) shape[d] = 2;
    shape[20] = 3;
    Strides dense(25, 1), strided(25, 0);
    for (int d = 23; d >= 0; --d) dense[d] = dense[d + 1] * shape[d + 1];
    for (int d = 0; d < 25; ++d) strided[d] = (d % 3) ? 0 : 5 * (d + 1);  // broadcast + gaps
    check_two(shape, dense, strided);
    CHECK(Indexer::make(shape, {dense}, "test").numel == 96);
  }
  SECTION("three operands: where / clamp") {
    const Shape shape{3, 4, 5};
    const Strides s0{20, 5, 1}, s1{0, 1, 0}, s2{1, 0, 3};
    const Indexer ix = Indexer::make(shape, {s0, s1, s2}, "test");
    CHECK(ix.nops == 3);
    int64_t visited = 0;
    cpu::strided_loop(ix, [&](int64_t i, int64_t o0, int64_t o1, int64_t o2) {
      CHECK(ix.offset(0, i) == o0);
      CHECK(ix.offset(1, i) == o1);
      CHECK(ix.offset(2, i) == o2);
      ++visited;
    });
    CHECK(visited == 60);
  }
}

TEST_CASE("Indexer: is a plain value a kernel can take", "[backend][indexer]") {
  STATIC_REQUIRE(std::is_trivially_copyable_v<Indexer>);
  STATIC_REQUIRE(Indexer::kMaxDims == 25);
  STATIC_REQUIRE(Indexer::kMaxOperands == 3);
  const Indexer a = Indexer::make({2, 3}, {Strides{3, 1}, Strides{1, 2}}, "test");
  Indexer b;
  std::memcpy(&b, &a, sizeof(Indexer));  // what a kernel launch does with its arguments
  for (int64_t i = 0; i < 6; ++i) CHECK(b.offset(1, i) == a.offset(1, i));
}

TEST_CASE("Indexer: errors name the op and the offending shape", "[backend][indexer]") {
  Shape many(26, 1);
  many[3] = 2;
  CHECK_THROWS_WITH(Indexer::make(many, {Strides(26, 0)}, "add"),
                    "add: tensors of at most 25 dimensions are supported, got 26 (shape [1, 1, 1, 2, 1, 1, 1, 1, 1, 1, "
                    "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])");
  CHECK_THROWS_WITH(Indexer::make({2, 3}, {}, "where"), "where: an Indexer takes 1 to 3 operands, got 0");
  CHECK_THROWS_WITH(Indexer::make({2}, {Strides{1}, Strides{1}, Strides{1}, Strides{1}}, "where"),
                    "where: an Indexer takes 1 to 3 operands, got 4");
  CHECK_THROWS_WITH(Indexer::make({2, 3}, {Strides{3, 1}, Strides{1}}, "mul"),
                    "mul: operand 1 has 1 strides for a shape of 2 dims (shape [2, 3])");
  CHECK_THROWS_AS(Indexer::make(many, {Strides(26, 0)}), tinytorch::Error);
}

TEST_CASE("functors: backend/functors.hpp, still reachable as backend::cpu::XxxOp", "[backend][functors]") {
  namespace be = tinytorch::backend;
  STATIC_REQUIRE(std::is_same_v<cpu::AddOp, be::AddOp>);
  STATIC_REQUIRE(std::is_same_v<cpu::SigmoidOp, be::SigmoidOp>);
  STATIC_REQUIRE(std::is_same_v<cpu::PowScalarOp, be::PowScalarOp>);
  STATIC_REQUIRE(std::is_same_v<cpu::MaximumOp, be::MaximumOp>);
  STATIC_REQUIRE(std::is_same_v<cpu::ClampScalarOp<float>, be::ClampScalarOp<float>>);
  STATIC_REQUIRE(std::is_same_v<cpu::ClampTensorOp, be::ClampTensorOp>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<be::PowScalarOp>);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(cpu::AddOp{}(INT64_MAX, int64_t{1}) == INT64_MIN);         // wraps as PyTorch's int64
  CHECK(cpu::SigmoidOp{}(-1000.0) == 0.0);                          // no overflow
  CHECK(cpu::SigmoidOp{}(0.0f) == 0.5f);
  CHECK(std::isnan(cpu::MaximumOp{}(nan, 1.0)));                    // NaN wins
  CHECK(cpu::FloorDivideOp{}(int64_t{-7}, int64_t{2}) == -4);
  CHECK(cpu::RemainderOp{}(-7.0, 2.0) == 1.0);
  CHECK(cpu::FmodOp{}(-7.0, 2.0) == -1.0);
  CHECK(cpu::detail::is_nan(nan));
  CHECK(be::ClampScalarOp<float>{true, true, -1.0f, 1.0f}(3.0f) == 1.0f);
}
