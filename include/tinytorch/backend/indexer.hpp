// tinytorch/backend/indexer.hpp — the one index-math struct of both backends: a loop's shape and
// the strides of up to kMaxOperands operands, as plain arrays a kernel takes by value.
//
// A pointwise loop walks the elements of the output (contiguous, row-major, `numel` elements)
// and reads each operand through its own strides (a broadcast dim has stride 0, a transposed or
// sliced view any stride; core/shape.hpp):
//   linear index i = sum_d idx_d * prod_{e > d} sizes[e]          (row-major over `sizes`)
//   offset(k, i)   = sum_d idx_d * strides[k][d]                  (element offset in operand k)
// Two walks use it. A CUDA kernel's thread has only i, so it computes offset(k, i) from scratch
// (offset() below: one division per dim; backend/cuda/elementwise.cuh). The CPU loop visits the
// elements in order, so it carries the multi-index and adds strides as it goes (strided_loop in
// backend/cpu/elementwise.hpp: no division at all); tests/test_indexer.cpp checks the two agree.
// Shapes: sizes (ndim,), strides[k] (ndim,) for k < nops; ndim in [0, 25] (a 0-dim tensor has one
// element at offset 0); operands nops..2 have stride 0 everywhere. The struct is trivially copyable
// (static_assert below), 816 bytes (25 dims x (1 size + 3 strides) x 8 bytes + 16), under a
// kernel's 4 KiB of parameters.
// Errors: more than 25 dims, no operand or more than kMaxOperands, or strides of another rank than
// the shape throw tinytorch::Error naming the op. The limit is PyTorch's for CUDA tensors
// (MAX_DIMS = 25); PyTorch's CPU loops have none, ours share the CUDA one so that both backends
// run the same code (a training loop never makes a 26-dim tensor). Only the strided loops build
// an Indexer: an op whose operands are all dense takes the flat path, which has no limit.
// Chapter: chapters/10-gpu-kernels.md. Reference: PyTorch's at::cuda::detail::OffsetCalculator
// (aten/src/ATen/cuda/detail/OffsetCalculator.cuh) and TensorIterator's CPU loops (which also
// advance a multi-index); dlsyscourse/hw4's CudaVec (shapes and strides by value).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/shape.hpp"  // Shape, Strides

TT_NAMESPACE_BEGIN namespace backend {

/// Sizes and per-operand strides of a strided loop, as plain arrays (see the file comment).
struct Indexer {
  static constexpr int kMaxDims = 25;      ///< most dims a loop takes (PyTorch's CUDA MAX_DIMS)
  static constexpr int kMaxOperands = 3;   ///< where(cond, a, b), clamp(x, lo, hi)

  int ndim;                                ///< number of dims, 0 .. kMaxDims
  int nops;                                ///< number of operands, 1 .. kMaxOperands
  int64_t numel;                           ///< prod(sizes): the elements the loop visits
  int64_t sizes[kMaxDims];                 ///< the loop's shape (the output's)
  int64_t strides[kMaxOperands][kMaxDims]; ///< element strides of each operand (0: broadcast)

  /// Builds the indexer on the host: `shape` is the output's shape, `operand_strides` each
  /// operand's element strides over that shape (already broadcast: rank == shape.size()). `op`
  /// names the calling op in errors. Throws tinytorch::Error for more than 25 dims, no operand or
  /// more than kMaxOperands, or strides whose rank differs from the shape's.
  static Indexer make(const Shape& shape, std::initializer_list<Strides> operand_strides,
                      const char* op = "Indexer") {
    const int64_t nd = static_cast<int64_t>(shape.size());
    TT_CHECK(nd <= kMaxDims, op, ": tensors of at most ", kMaxDims, " dimensions are supported, got ", nd,
             " (shape ", shape_str(shape), ")");
    const int64_t n_ops = static_cast<int64_t>(operand_strides.size());
    TT_CHECK(n_ops >= 1 && n_ops <= kMaxOperands, op, ": an Indexer takes 1 to ", kMaxOperands,
             " operands, got ", n_ops);
    Indexer ix{};
    ix.ndim = static_cast<int>(nd);
    ix.nops = static_cast<int>(n_ops);
    ix.numel = 1;
    for (int d = 0; d < ix.ndim; ++d) {
      ix.sizes[d] = shape[d];
      ix.numel *= shape[d];
    }
    for (int k = 0; k < ix.nops && k < kMaxOperands; ++k) {  // (the bound again, for GCC's
      const Strides& s = operand_strides.begin()[k];         //  -Wstringop-overflow)
      TT_CHECK(static_cast<int64_t>(s.size()) == nd, op, ": operand ", k, " has ", s.size(),
               " strides for a shape of ", nd, " dims (shape ", shape_str(shape), ")");
      for (int d = 0; d < ix.ndim && d < kMaxDims; ++d) ix.strides[k][d] = s[d];
    }
    return ix;
  }

  /// Element offset in operand `operand` of the element at row-major `linear_index` of the loop
  /// (0 <= linear_index < numel; a 0-dim loop has the one element at offset 0).
  TT_HOST_DEVICE int64_t offset(int operand, int64_t linear_index) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {  // peel idx_d off the end: one division per dim
      const int64_t q = linear_index / sizes[d];
      off += (linear_index - q * sizes[d]) * strides[operand][d];
      linear_index = q;
    }
    return off;
  }
};

static_assert(std::is_trivially_copyable_v<Indexer>, "an Indexer is passed to kernels by value");
static_assert(sizeof(Indexer) == 816, "the size the file comment gives");

}  TT_NAMESPACE_END  // namespace tinytorch::backend
