// tinytorch/tensor.hpp — Tensor: a shared handle to TensorImpl.
//
// A Tensor is a view on a Storage:
//   TensorImpl { storage, shape, strides, offset, dtype, requires_grad, grad, grad_fn }
// element (i0, ..., ik) lives at storage[offset + sum_j i_j * strides[j]]. Copying a Tensor copies
// the handle (like PyTorch: `b = a` shares data); `clone()` copies the data.
//
// This header declares Tensor's methods and operators. Each is defined on the lowest floor that
// has what it needs: the metadata (size, stride, is_contiguous, dim, ...) here; the host reads
// (item, at, tolist) in ops/item.hpp; the autograd half (requires_grad_, grad, backward, hooks)
// in autograd/variable.hpp; views, math and operators, with their autograd, in functional.ipp.
// A program that includes only this header, only ops/ or only autograd/ links (tests/layers);
// the umbrella <tinytorch/tinytorch.hpp> includes them all, so a user never sees a Tensor
// without its differentiable methods.
// Chapter: chapters/01-training-loop.md (headers to read), chapters/02-autograd.md (grad_fn, hooks, _version).
// Reference: PyTorch's torch.Tensor and c10::TensorImpl.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/config.hpp"
#include "tinytorch/core/device.hpp"
#include "tinytorch/core/dtype.hpp"
#include "tinytorch/core/random.hpp"
#include "tinytorch/core/scalar.hpp"
#include "tinytorch/core/shape.hpp"
#include "tinytorch/core/storage.hpp"

TT_NAMESPACE_BEGIN

class Tensor;
namespace autograd {
struct Node;
}

/// A hook on a tensor's gradient (register_hook): sees the gradient flowing into the tensor and
/// may return a replacement (return an undefined Tensor() to keep it).
using TensorHook = std::function<Tensor(const Tensor&)>;
/// Runs after a leaf's .grad has been updated (register_post_accumulate_grad_hook); receives the
/// leaf itself. DDP uses it as its "this gradient is ready" signal.
using PostAccumulateGradHook = std::function<void(Tensor&)>;

/// The data behind a Tensor handle. Users go through Tensor; library code may read the fields.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  ///< in elements
  DType dtype = kFloat32;
  bool requires_grad = false;  ///< set on leaves by the user; non-leaves require grad via grad_fn
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;      ///< the node that made this tensor (non-leaves)
  std::weak_ptr<autograd::Node> grad_accumulator;  ///< leaves: the AccumulateGrad node, cached
  std::vector<TensorHook> hooks;  ///< leaves' register_hook (non-leaves keep theirs on grad_fn)
  std::vector<PostAccumulateGradHook> post_accumulate_grad_hooks;
  // ---- views and in-place ops (autograd/inplace.hpp; PyTorch's DifferentiableViewMeta) ----
  /// Set on a tensor made by a view method (view, narrow, t, expand, ...): the tensor it views,
  /// followed to the root (a view of a view points at the first base). Null otherwise (detach()
  /// shares the storage but is not a view for autograd).
  std::shared_ptr<TensorImpl> view_base;
  /// On a base: bumped each time an in-place op gives it a new grad_fn. On a view: the base's
  /// count when the view's grad_fn was made; when they differ the view's grad_fn is remade.
  uint64_t history = 0;
  bool view_made_in_no_grad = false;  ///< views: made while grad mode was off
};

/// Options for the creation functions, as torch::TensorOptions:
///   zeros({2, 3}, kFloat64);  ones({2}, TensorOptions().requires_grad(true));
struct TensorOptions {
  DType dtype_ = kFloat32;
  Device device_ = Device::cpu();
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}  // NOLINT: implicit on purpose, as in PyTorch
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions dtype(DType d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r = true) const { auto o = *this; o.requires_grad_ = r; return o; }
};

class Tensor {
 public:
  Tensor() = default;  ///< an undefined tensor (no data); defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata (tensor.hpp) -------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  const Shape& sizes() const { return checked()->shape; }
  const Shape& shape() const { return checked()->shape; }
  const Strides& strides() const { return checked()->strides; }
  /// sizes()[dim] / strides()[dim]; dim may be negative (-1: the last). Throws tinytorch::Error as
  /// PyTorch raises IndexError: "size: dimension out of range (expected to be in range of [-2, 1],
  /// but got 2)", and for a 0-d tensor "size: Dimension specified as 0 but tensor has no dimensions".
  int64_t size(int64_t dim) const { return sizes()[dim_index(dim, "size")]; }
  int64_t stride(int64_t dim) const { return strides()[dim_index(dim, "stride")]; }
  int64_t dim() const { return static_cast<int64_t>(checked()->shape.size()); }
  int64_t numel() const { return numel_of(checked()->shape); }
  int64_t storage_offset() const { return checked()->offset; }
  DType dtype() const { return checked()->dtype; }
  Device device() const { return checked()->storage->device(); }
  bool is_floating_point() const { return tinytorch::is_floating_point(dtype()); }
  bool is_cuda() const { return device().is_cuda(); }  ///< Tensor.is_cuda
  /// True when the elements are laid out row-major with no gaps: stride[d] = prod(size[d+1:])
  /// for every dim of size > 1 (size-1 dims may have any stride; an empty tensor is contiguous
  /// whatever its strides, as PyTorch).
  bool is_contiguous() const {
    const Shape& s = sizes();
    const Strides& st = strides();
    if (numel() == 0) return true;
    int64_t expected = 1;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] != 1 && st[i] != expected) return false;
      expected *= s[i];
    }
    return true;
  }
  /// True when both handles point at the same TensorImpl (PyTorch's `a is b`).
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  /// Pointer to the first element (offset applied). Throws if T does not match dtype().
  /// nullptr for a tensor with no storage bytes (an empty tensor, or a view of one, whose offset
  /// may be non-zero: adding it to a null pointer would be undefined behaviour).
  template <typename T> T* data_ptr() const {
    TT_CHECK(dtype_of<T>() == dtype(), "data_ptr: tensor has dtype ", dtype_name(dtype()),
             " but ", dtype_name(dtype_of<T>()), " was requested");
    T* base = static_cast<T*>(checked()->storage->data());
    if (!base) check_not_freed("data_ptr");
    return base ? base + impl_->offset : nullptr;
  }
  void* raw_data() const {
    char* base = static_cast<char*>(checked()->storage->data());
    if (!base) check_not_freed("raw_data");
    return base ? base + impl_->offset * element_size(dtype()) : nullptr;
  }
  /// The value of a one-element tensor, converted to T (PyTorch's .item()).
  template <typename T = double> T item() const;
  /// Element at a multi-index, converted to T (for tests and printing; slow).
  template <typename T = double> T at(const std::vector<int64_t>& index) const;
  /// All elements in row-major order, converted to T.
  template <typename T = double> std::vector<T> tolist() const;

  // ---- autograd (autograd/variable.hpp) --------------------------------------------------
  /// True for leaves marked with requires_grad_, for results of ops on such tensors, and for
  /// views of a tensor that requires grad. (Defined in autograd/variable.hpp: a view whose base
  /// was changed by an in-place op first gets its grad_fn remade, as PyTorch does.)
  bool requires_grad() const;
  /// Marks a leaf as requiring grad (in place, returns *this). Throws on a non-leaf (as PyTorch).
  Tensor& requires_grad_(bool requires_grad = true);
  /// The accumulated gradient (undefined until a backward reaches this leaf).
  Tensor grad() const;
  /// Sets .grad (PyTorch's `x.grad = g`); an undefined g clears it. Throws tinytorch::Error when g
  /// differs from this tensor in shape, device or dtype (PyTorch's "assigned grad has data of a
  /// different size / type", "... located on a different device").
  void set_grad(const Tensor& g);
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  /// Leaves are tensors the user created (no grad_fn). Gradients accumulate in leaves' .grad.
  bool is_leaf() const;
  /// The storage's version counter: the number of in-place writes to this tensor or to any tensor
  /// sharing its storage (views, detach()) (PyTorch's `tensor._version`).
  int64_t _version() const { return checked()->storage->version(); }
  /// True for a tensor made by a view method (PyTorch's `_is_view()`); _base() is what it views.
  bool _is_view() const { return checked()->view_base != nullptr; }
  Tensor _base() const { return Tensor(checked()->view_base); }
  /// Computes gradients of this tensor w.r.t. the graph leaves. A scalar may omit `gradient`;
  /// otherwise it is the gradient of some outer loss w.r.t. this tensor (same shape).
  /// Throws if this tensor does not require grad, if a non-scalar has no gradient, or when the
  /// graph was freed by an earlier backward without retain_graph.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  ///< same data, cut from the graph
  Tensor& detach_();
  /// Hook on the gradient flowing into this tensor (leaf or not). See TensorHook.
  void register_hook(TensorHook hook) const;
  /// Leaf-only hook run after .grad was updated (PyTorch 2.1+). See PostAccumulateGradHook.
  void register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const;

  // ---- views: share storage (ops/shape.hpp, differentiable in functional.hpp) -------------
  /// Same data, new shape; one dim may be -1. Throws when the strides do not allow a view
  /// (then use reshape, which copies), as PyTorch does.
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;  ///< a view when possible, else a copy
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  ///< transpose of a <= 2-D tensor
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;              ///< removes every size-1 dim
  Tensor squeeze(int64_t dim) const;   ///< removes `dim` if it has size 1, else returns a view
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(const Shape& shape) const;
  /// Splits into `chunks` pieces of ceil(size/chunks) along dim; may return fewer (torch.chunk).
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /// Splits into pieces of `split_size` along dim, the last one smaller (torch.split).
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;
  /// The same values on `device`: *this when already there (as PyTorch), else a copy whose
  /// backward (ToCopyBackward0) copies the gradient back. Copies between devices need the CUDA
  /// backend; without it they throw tinytorch::Error naming both devices.
  Tensor to(Device device) const;
  /// to(device) and to(dtype) in one copy (one ToCopyBackward0 node), as Tensor.to(device, dtype).
  Tensor to(Device device, DType dtype) const;
  /// to(Device::cuda(index)) (Tensor.cuda(): *this when already there). Throws "invalid device
  /// ordinal" for a GPU the machine does not have, and without the CUDA backend.
  Tensor cuda(int index = 0) const;
  /// to(Device::cpu()) (Tensor.cpu()).
  Tensor cpu() const;

  // ---- elementwise, with broadcasting (functional.hpp) ------------------------------------
  Tensor operator-() const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  /// x^exponent. An int64 x with an integral exponent stays int64 (exact, wrapping modulo 2^64 as
  /// PyTorch; a negative one throws "Integers to negative integer powers are not allowed."); a
  /// floating exponent gives float32, as torch.pow.
  Tensor pow(Scalar exponent) const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  /// Comparisons return int64 0/1 tensors (tinytorch has no bool dtype; .sum() then counts,
  /// giving the same int64 result as PyTorch's bool.sum()). Not differentiable.
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;

  // ---- reductions (functional.hpp) --------------------------------------------------------
  Tensor sum() const;
  Tensor sum(int64_t dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int64_t dim, bool keepdim = false) const;
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;   ///< over each dim listed; {}: all
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false) const;  ///< over each dim listed; {}: all
  Tensor max() const;
  /// (values, indices) along dim; indices are int64, first index on ties.
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;  ///< index into the flattened tensor
  Tensor argmax(int64_t dim, bool keepdim = false) const;

  // ---- linear algebra and softmax (functional.hpp) ----------------------------------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;

  // ---- min/max family, pow, division, comparisons with numbers, clamp, where ---------------
  // (functional.hpp, where each is documented; shapes broadcast as in the section above)
  Tensor min() const;
  /// (values, indices) along dim; indices are int64, first index on ties.
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmin() const;  ///< index into the flattened tensor
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor amax(const std::vector<int64_t>& dim = {}, bool keepdim = false) const;  ///< {}: all dims
  Tensor amin(const std::vector<int64_t>& dim = {}, bool keepdim = false) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor max(const Tensor& other) const;  ///< maximum(other)
  Tensor min(const Tensor& other) const;  ///< minimum(other)
  Tensor pow(const Tensor& exponent) const;
  Tensor floor_divide(const Tensor& other) const;
  Tensor floor_divide(double other) const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(double other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(double other) const;
  /// torch.Tensor.div(other) (DivBackward0 / DivBackward1) and div(other, rounding_mode=None|
  /// "trunc"|"floor") (functional.hpp's div: DivBackward2 / DivBackward3, as PyTorch)
  Tensor div(const Tensor& other) const;
  Tensor div(double other) const;
  Tensor div(const Tensor& other, const std::optional<std::string>& rounding_mode) const;
  Tensor div(double other, const std::optional<std::string>& rounding_mode) const;
  Tensor trunc() const;
  Tensor eq(double other) const;
  Tensor ne(double other) const;
  Tensor lt(double other) const;
  Tensor le(double other) const;
  Tensor gt(double other) const;
  Tensor ge(double other) const;
  /// Either bound may be std::nullopt (not both); clamp(min, max) with min > max gives max.
  Tensor clamp(std::optional<double> min, std::optional<double> max = std::nullopt) const;
  /// Tensor bounds, broadcast; an undefined Tensor() is an absent bound (not both).
  Tensor clamp(const Tensor& min, const Tensor& max = Tensor()) const;
  Tensor clamp_min(double min) const;
  Tensor clamp_min(const Tensor& min) const;
  Tensor clamp_max(double max) const;
  Tensor clamp_max(const Tensor& max) const;
  /// where(condition, *this, other) (Tensor.where).
  Tensor where(const Tensor& condition, const Tensor& other) const;
  Tensor where(const Tensor& condition, double other) const;

  // ---- in place (functional.hpp, autograd in autograd/inplace.hpp) ------------------------
  // As PyTorch: each bumps _version(); with grad mode on and a tensor that requires grad involved
  // the op is recorded (the tensor's grad_fn becomes e.g. AddBackward0; on a view, its base's
  // becomes CopySlices). A leaf that requires grad (or a view of one) throws while grad mode is
  // on: update parameters under NoGradGuard, as optimizers do. Writes that would read and write
  // the same memory location in another order throw PyTorch's "unsupported operation" errors.
  // Scalars (core/scalar.hpp) follow PyTorch's type promotion: on an int64 tensor an integral
  // scalar computes exactly in int64 (wrapping modulo 2^64), a floating one (add_(1.0)) throws
  // "result type Float can't be cast to the desired output type Long".
  Tensor& add_(const Tensor& other, Scalar alpha = 1);
  Tensor& add_(Scalar value);
  Tensor& sub_(const Tensor& other, Scalar alpha = 1);
  Tensor& sub_(Scalar value);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar value);
  Tensor& div_(const Tensor& other);
  Tensor& div_(Scalar value);
  Tensor& addcmul_(const Tensor& t1, const Tensor& t2, Scalar value = 1);
  Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, Scalar value = 1);
  Tensor& zero_();
  Tensor& fill_(Scalar value);  ///< exact for int64; a floating value is truncated toward zero there
  Tensor& copy_(const Tensor& src);  ///< src broadcast to this shape, converted to this dtype
  Tensor& uniform_(double from = 0.0, double to = 1.0, Generator* gen = nullptr);
  Tensor& normal_(double mean = 0.0, double std = 1.0, Generator* gen = nullptr);

  /// PyTorch's repr, e.g. "tensor([[1., 2.]], requires_grad=True)".
  std::string str() const;
  /// True when shapes match and |a-b| <= atol + rtol*|b| elementwise (torch.allclose).
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8) const;
  /// True when shapes and every value are equal (torch.equal).
  bool equal(const Tensor& other) const;

 private:
  TensorImpl* checked() const {
    TT_CHECK(impl_ != nullptr, "Tensor: operation on an undefined tensor");
    return impl_.get();
  }
  /// A null base pointer is right for a tensor without elements; one with elements views a
  /// storage freed by Storage::resize_(0) (FSDP FULL_SHARD's parameters outside a unit's forward
  /// and backward), and reading it would dereference null: throw instead.
  void check_not_freed(const char* op) const {
    TT_CHECK(numel() == 0, op, ": the tensor of shape ", shape_str(sizes()), " views a storage of 0 bytes: its memory "
             "was freed (Storage::resize_(0)). FullyShardedDataParallel with FULL_SHARD frees a wrapped unit's "
             "parameters outside its forward and backward: read them after fsdp.summon_full_params(), and call a "
             "wrapped submodule only through the model's forward");
  }
  /// dim wrapped into [0, dim()) for size() / stride(): a 0-d tensor has no dim to index (where
  /// wrap_dim, for reductions, accepts 0 and -1).
  int64_t dim_index(int64_t d, const char* op) const {
    TT_CHECK(dim() > 0, op, ": Dimension specified as ", d, " but tensor has no dimensions");
    return wrap_dim(d, dim(), op);
  }
  std::shared_ptr<TensorImpl> impl_;
};

// ---- operators (functional.hpp) -------------------------------------------------------------
TT_DECL Tensor operator+(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator-(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator*(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator/(const Tensor& a, const Tensor& b);
// With a Scalar: int64 tensor and integral scalar -> int64 (exact, wrapping modulo 2^64); int64
// tensor and floating scalar -> float32; t / s is true division (always floating), as in PyTorch.
TT_DECL Tensor operator+(const Tensor& a, Scalar b);
TT_DECL Tensor operator-(const Tensor& a, Scalar b);
TT_DECL Tensor operator*(const Tensor& a, Scalar b);
TT_DECL Tensor operator/(const Tensor& a, Scalar b);
TT_DECL Tensor operator+(Scalar a, const Tensor& b);
TT_DECL Tensor operator-(Scalar a, const Tensor& b);
TT_DECL Tensor operator*(Scalar a, const Tensor& b);
TT_DECL Tensor operator/(Scalar a, const Tensor& b);
TT_DECL Tensor& operator+=(Tensor& a, const Tensor& b);
TT_DECL Tensor& operator-=(Tensor& a, const Tensor& b);
TT_DECL Tensor& operator*=(Tensor& a, const Tensor& b);
TT_DECL Tensor& operator/=(Tensor& a, const Tensor& b);
TT_DECL Tensor& operator+=(Tensor& a, Scalar b);
TT_DECL Tensor& operator*=(Tensor& a, Scalar b);
TT_DECL std::ostream& operator<<(std::ostream& os, const Tensor& t);
// % is torch.remainder; comparisons return int64 0/1 tensors (functional.hpp)
TT_DECL Tensor operator%(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator%(const Tensor& a, double b);
TT_DECL Tensor operator==(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator!=(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator<(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator<=(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator>(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator>=(const Tensor& a, const Tensor& b);
TT_DECL Tensor operator==(const Tensor& a, double b);
TT_DECL Tensor operator!=(const Tensor& a, double b);
TT_DECL Tensor operator<(const Tensor& a, double b);
TT_DECL Tensor operator<=(const Tensor& a, double b);
TT_DECL Tensor operator>(const Tensor& a, double b);
TT_DECL Tensor operator>=(const Tensor& a, double b);
TT_DECL Tensor operator==(double a, const Tensor& b);
TT_DECL Tensor operator!=(double a, const Tensor& b);
TT_DECL Tensor operator<(double a, const Tensor& b);
TT_DECL Tensor operator<=(double a, const Tensor& b);
TT_DECL Tensor operator>(double a, const Tensor& b);
TT_DECL Tensor operator>=(double a, const Tensor& b);

// ---- creation (ops/creation.hpp) ------------------------------------------------------------
TT_DECL Tensor empty(const Shape& shape, TensorOptions options = {});
TT_DECL Tensor zeros(const Shape& shape, TensorOptions options = {});
TT_DECL Tensor ones(const Shape& shape, TensorOptions options = {});
TT_DECL Tensor full(const Shape& shape, Scalar value, TensorOptions options = {});
/// 1-D tensor from values; e.g. tensor({1, 2, 3}). Default dtype float32.
TT_DECL Tensor tensor(const std::vector<double>& values, TensorOptions options = {});
/// Tensor of `shape` from row-major values; throws when their count is not numel(shape).
TT_DECL Tensor tensor(const std::vector<double>& values, const Shape& shape, TensorOptions options = {});
/// 0-d tensor (torch.tensor(3.5)).
TT_DECL Tensor scalar_tensor(Scalar value, TensorOptions options = {});
/// [0, end) / [start, end) with step, as torch.arange. Without a dtype the result is int64 when
/// start, end and step are all integral values and float32 otherwise (PyTorch decides from the
/// Python argument types; arange(0.0, 5.0) is float32 there but int64 here: pass kFloat32).
TT_DECL Tensor arange(int64_t end, std::optional<DType> dtype = std::nullopt);
TT_DECL Tensor arange(double start, double end, double step = 1.0, std::optional<DType> dtype = std::nullopt);
/// Uniform [0, 1) / standard normal / integers in [low, high), drawn from `gen` or the default
/// generator (see core/random.hpp; streams are reproducible but not PyTorch's).
TT_DECL Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
TT_DECL Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
TT_DECL Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options = kInt64,
               Generator* gen = nullptr);
/// A random permutation of 0..n-1 (int64), Fisher-Yates with `gen`.
TT_DECL Tensor randperm(int64_t n, Generator* gen = nullptr);
TT_DECL Tensor empty_like(const Tensor& t);
TT_DECL Tensor zeros_like(const Tensor& t);
TT_DECL Tensor ones_like(const Tensor& t);
TT_DECL Tensor full_like(const Tensor& t, Scalar value);

// ---- functions over several tensors (functional.hpp) ----------------------------------------
TT_DECL Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
TT_DECL Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
TT_DECL Tensor matmul(const Tensor& a, const Tensor& b);

TT_NAMESPACE_END  // namespace tinytorch
