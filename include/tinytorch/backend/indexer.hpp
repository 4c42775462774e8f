// tinytorch/backend/indexer.hpp — strided offsets of up to kMaxOperands operands, passed to a
// kernel by value.
//
// A pointwise kernel walks the elements of the output (contiguous, row-major, `numel` elements)
// and reads each operand through its own strides (a broadcast dim has stride 0, a transposed or
// sliced view any stride; core/shape.hpp). std::vector<int64_t> strides cannot be a kernel
// argument, so the shape and the strides are copied into fixed arrays of kMaxDims = 8 dims:
//   linear index i = sum_d idx_d * prod_{e > d} sizes[e]          (row-major over `sizes`)
//   offset(k, i)   = sum_d idx_d * strides[k][d]                  (element offset in operand k)
// Shapes: sizes (ndim,), strides[k] (ndim,) for k < nops; ndim in [0, 8] (a 0-dim tensor has one
// element at offset 0). The struct is trivially copyable (static_assert below) and 272 bytes
// (8 dims x (1 size + 3 strides) x 8 bytes + 16), well under a kernel's 4 KiB of parameters.
// offset() is TT_HOST_DEVICE: the CPU, the simulator and nvcc's device code run the same index
// math. Built on the host only (make()).
// Errors: ndim > 8, more than kMaxOperands operands, or strides of another rank than the shape
// throw tinytorch::Error naming the op.
// Chapter: chapters/10-gpu-kernels.md. Reference: dlsyscourse/hw4's CudaVec (MAX_VEC_SIZE = 8,
// shapes and strides by value), PyTorch's at::cuda::detail::OffsetCalculator (MAX_DIMS = 25;
// aten/src/ATen/cuda/detail/OffsetCalculator.cuh), which differs only in its limit.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "../core/check.hpp"
#include "../core/config.hpp"
#include "../core/shape.hpp"  // Shape, Strides

TT_NAMESPACE_BEGIN namespace backend {

/// Sizes and per-operand strides of a strided loop, as plain arrays (see the file comment).
struct Indexer {
  static constexpr int kMaxDims = 8;       ///< most dims a kernel takes (PyTorch's CUDA: 25)
  static constexpr int kMaxOperands = 3;   ///< where(cond, a, b), clamp(x, lo, hi)

  int ndim;                                ///< number of dims, 0 .. kMaxDims
  int nops;                                ///< number of operands, 1 .. kMaxOperands
  int64_t numel;                           ///< prod(sizes): the elements the loop visits
  int64_t sizes[kMaxDims];                 ///< the loop's shape (the output's)
  int64_t strides[kMaxOperands][kMaxDims]; ///< element strides of each operand (0: broadcast)

  /// Builds the indexer on the host: `shape` is the output's shape, `operand_strides` each
  /// operand's element strides over that shape (already broadcast: rank == shape.size()). `op`
  /// names the calling op in errors. Throws tinytorch::Error for more than 8 dims, no operand or
  /// more than kMaxOperands, or strides whose rank differs from the shape's.
  static Indexer make(const Shape& shape, std::initializer_list<Strides> operand_strides,
                      const char* op = "Indexer") {
    const int64_t nd = static_cast<int64_t>(shape.size());
    TT_CHECK(nd <= kMaxDims, op, ": the CUDA backend supports at most ", kMaxDims,
             " dimensions, got ", nd, " (shape ", shape_str(shape), ")");
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
    int k = 0;
    for (const Strides& s : operand_strides) {
      TT_CHECK(static_cast<int64_t>(s.size()) == nd, op, ": operand ", k, " has ", s.size(),
               " strides for a shape of ", nd, " dims (shape ", shape_str(shape), ")");
      for (int d = 0; d < ix.ndim; ++d) ix.strides[k][d] = s[d];
      ++k;
    }
    return ix;
  }

  /// Element offset in operand `operand` of the element at row-major `linear_index` of the loop
  /// (0 <= linear_index < numel; a 0-dim loop has the one element at offset 0).
  TT_HOST_DEVICE int64_t offset(int operand, int64_t linear_index) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t size = sizes[d];
      off += (linear_index % size) * strides[operand][d];
      linear_index /= size;
    }
    return off;
  }
};

static_assert(std::is_trivially_copyable_v<Indexer>, "an Indexer is passed to kernels by value");
static_assert(sizeof(Indexer) == 272, "the size the file comment gives");

}  TT_NAMESPACE_END  // namespace tinytorch::backend
