// tinytorch/autograd/inplace.hpp — autograd for in-place ops and views: recording add_, mul_, ...
// on tensors that require grad, CopySlices for a write through a view, remaking a view's grad_fn
// after its base changed.
// PyTorch's rules, which Tensor's in-place methods (functional.hpp) follow step by step:
//   1. check_inplace: with grad mode on, an in-place op on `self` is recorded when self (or its
//      base) or an operand requires grad; PyTorch's errors for a leaf that requires grad, a view
//      of one, and a view made under NoGradGuard of a tensor that requires grad.
//   2. The op's node saves what its backward needs before the write: `other` (version-checked) and,
//      where the derivative reads the old self (mul_, div_), a copy of it.
//   3. The kernel writes self; finish_inplace bumps the storage's version (always) and, when
//      recording, rebases self's history: self.grad_fn = the node (AddBackward0, ...), whose edge 0
//      is the old history; for a view of base, base.grad_fn = CopySlices(base's old history, node)
//      and self.grad_fn = AsStridedBackward0(base's new history).
//   4. Other views of a rebased base get AsStridedBackward0(base's new history) when their grad_fn
//      or requires_grad is next read (TensorImpl::history counts the rebases; refresh_view).
// The math, with base B, view V = B[idx] (the view's sizes, strides and offset in storage):
//   AsStridedBackward0:  V = B[idx]                =>  dB = zeros, dB[idx] += dV
//   CopySlices:          B' = B with B'[idx] = f(B[idx], others)
//                        =>  dB = dB' with dB[idx] replaced by d f/d self (dB'[idx]),
//                            d others = d f/d others (dB'[idx])
// Shapes: AsStridedBackward0 maps the view's shape to the base's; CopySlices keeps the base's.
// Where tinytorch differs from PyTorch, and how hooks meet in-place ops: chapters/02-autograd.md,
// 2.7. Reference: PyTorch's VariableTypeUtils.h (check_inplace), variable.cpp (rebase_history),
// functions/tensor.cpp (CopySlices), tools/autograd/derivatives.yaml.
// Chapter: chapters/02-autograd.md.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "tinytorch/ops/creation.hpp"
#include "tinytorch/ops/elementwise.hpp"
#include "tinytorch/ops/reduce.hpp"
#include "tinytorch/ops/shape.hpp"
#include "tinytorch/autograd/functions.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

/// Where a tensor's elements live in its storage: element i at offset + sum_d i_d * strides[d].
struct Geometry {
  Shape shape;
  Strides strides;
  int64_t offset = 0;
};
inline Geometry geometry_of(const TensorImpl& t) { return {t.shape, t.strides, t.offset}; }

// The smallest and largest storage index the geometry touches (numel > 0).
inline std::pair<int64_t, int64_t> storage_range(const Geometry& g) {
  int64_t lo = g.offset, hi = g.offset;
  for (size_t d = 0; d < g.shape.size(); ++d) {
    const int64_t span = (g.shape[d] - 1) * g.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi};
}

// A zeroed buffer covering the storage indices of `base` (which contain those of `view`), and
// the two geometries laid over it: what PyTorch's as_strided backward and CopySlices compute in.
struct StorageScratch {
  Tensor buffer, base, view;
  StorageScratch(const Geometry& b, const Geometry& v, DType dtype, Device device = Device::cpu()) {
    auto [blo, bhi] = storage_range(b);
    auto [vlo, vhi] = storage_range(v);
    const int64_t lo = std::min(blo, vlo), hi = std::max(bhi, vhi);
    buffer = zeros({hi - lo + 1}, TensorOptions(dtype).device(device));
    base = ops::make_view(buffer, b.shape, b.strides, b.offset - lo);
    view = ops::make_view(buffer, v.shape, v.strides, v.offset - lo);
  }
};

/// The grad_fn of a view whose base's history changed: V = B[idx]  =>  dB = zeros, dB[idx] += dV.
/// (Elements of an expanded view that share a location add up there.)
struct AsStridedBackward0 : Node {
  Geometry base, view;
  std::string name() const override { return "AsStridedBackward0"; }
  std::vector<Tensor> backward(const Tensor& dy) override {
    if (numel_of(base.shape) == 0 || numel_of(view.shape) == 0) return {zeros(base.shape, TensorOptions(dy.dtype()).device(dy.device()))};
    StorageScratch s(base, view, dy.dtype(), dy.device());
    ops::binary_(s.view, dy, backend::cpu::AddOp{}, "as_strided_backward");  // a sequential += loop
    return {ops::contiguous(s.base)};
  }
};

/// The grad_fn of a base after an in-place op `fn` wrote through its view V = B[idx]:
///   dB = dB' with dB[idx] replaced by fn's gradient for its self input; fn's other inputs get
///   fn's other gradients. next_edges: {B's history before the write, fn's other inputs...}.
struct CopySlices : Node {
  Geometry base, view;
  std::shared_ptr<Node> fn;  ///< the in-place op's node (called from here, never by the engine)
  std::string name() const override { return "torch::autograd::CopySlices"; }
  std::vector<Tensor> backward(const Tensor& dy) override {
    fn->check_saved_versions();
    if (numel_of(base.shape) == 0 || numel_of(view.shape) == 0) return {dy};  // nothing was written
    StorageScratch s(base, view, dy.dtype(), dy.device());
    ops::binary_(s.base, dy, backend::SecondOp{}, "CopySlices");  // dB = dB'
    std::vector<Tensor> res = fn->apply(ops::clone(s.view));                 // fn's gradients
    if (res.empty() || !res[0].defined()) ops::unary_(s.view, backend::ZeroOp{}, "CopySlices");
    else ops::binary_(s.view, res[0], backend::SecondOp{}, "CopySlices");
    std::vector<Tensor> out{ops::contiguous(s.base)};
    for (size_t i = 1; i < res.size(); ++i) out.push_back(res[i]);
    return out;
  }
  void release_saved() override {
    fn->release_saved();
    fn->saved_versions.clear();
  }
};

/// Remakes the grad_fn of a view whose base got a new history from an in-place op since the view's
/// grad_fn was made (PyTorch does this when a view's grad_fn is read). Called by Tensor::grad_fn()
/// and requires_grad(). A view made under NoGradGuard cannot follow its base: PyTorch's error.
inline void refresh_view(TensorImpl* impl) {
  TensorImpl* base = impl->view_base.get();
  if (!base || impl->history == base->history) return;
  auto refresh = [&] {
    if (impl->history == base->history) return;  // another thread did it
    TT_CHECK(!impl->view_made_in_no_grad, "A view was created in no_grad mode and its base or another view of its "
             "base has been modified inplace with grad mode enabled. Given that this use case is ambiguous and "
             "error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace "
             "either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside "
             "(if you want the inplace to be tracked).");
    Edge to_base = gradient_edge(Tensor(impl->view_base));  // the base is no view: no recursion
    if (to_base.fn) {
      auto n = std::make_shared<AsStridedBackward0>();
      n->base = geometry_of(*base);
      n->view = geometry_of(*impl);
      n->next_edges.push_back(std::move(to_base));
      impl->grad_fn = std::move(n);
    } else {
      impl->grad_fn = nullptr;
    }
    impl->history = base->history;
  };
  if (!in_parallel_region()) return refresh();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  refresh();
}

/// Marks `out`, just made from `base` by a view method, as a view of base's root (PyTorch's
/// as_view). Returns out. Not a view when out has its own storage (reshape that copied) or is
/// base itself.
inline Tensor as_view(const Tensor& base, Tensor out) {
  if (!out.defined() || out.impl() == base.impl() || out.impl()->storage != base.impl()->storage) return out;
  TensorImpl* b = base.impl();
  std::shared_ptr<TensorImpl> root = b->view_base ? b->view_base : base.impl_ptr();
  out.impl()->history = root->history;
  out.impl()->view_made_in_no_grad = !GradMode::is_enabled() || (b->view_base && b->view_made_in_no_grad);
  out.impl()->view_base = std::move(root);
  return out;
}

/// Step 1 (see the top of this file): true when the in-place op on `self` with operands `others`
/// must be recorded; throws PyTorch's errors for leaves and views that may not be written.
inline bool check_inplace(const Tensor& self, std::initializer_list<const Tensor*> others, const char* op) {
  TT_CHECK(self.defined(), op, ": called on an undefined tensor");
  if (!GradMode::is_enabled()) return false;
  bool record = self.requires_grad();
  for (const Tensor* t : others) record = record || (t->defined() && t->requires_grad());
  if (!record) return false;
  const TensorImpl* impl = self.impl();
  if (impl->view_base) {
    TT_CHECK(!impl->view_made_in_no_grad, op, ": A view was created in no_grad mode and is being modified inplace "
             "with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You "
             "can clarify your code by moving both the view and the inplace either both inside the no_grad block "
             "(if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).");
    TT_CHECK(!(self.requires_grad() && Tensor(impl->view_base).is_leaf()), op, ": a view of a leaf Variable that "
             "requires grad is being used in an in-place operation.");
  }
  TT_CHECK(!(self.requires_grad() && self.is_leaf()), op, ": a leaf Variable that requires grad is being used in "
           "an in-place operation. (Update parameters under NoGradGuard, as optimizers do, or work on a "
           "detach()ed copy.)");
  return true;
}

/// Step 3: after the kernel wrote `self`. Bumps its version; when `node` is set (check_inplace
/// said record), connects it to self's old history and the operands' and rebases self's history.
inline void finish_inplace(const Tensor& self, std::shared_ptr<Node> node, std::initializer_list<const Tensor*> others) {
  self.impl()->storage->bump_version();
  if (!node) return;
  node->next_edges.clear();
  node->next_edges.push_back(gradient_edge(self));
  for (const Tensor* t : others) node->next_edges.push_back(gradient_edge(*t));
  TensorImpl* impl = self.impl();
  if (!impl->view_base) {
    impl->grad_fn = std::move(node);
    ++impl->history;  // this tensor's views now have stale grad_fns (refresh_view)
    return;
  }
  TensorImpl* base = impl->view_base.get();
  auto cs = std::make_shared<CopySlices>();
  cs->base = geometry_of(*base);
  cs->view = geometry_of(*impl);
  cs->saves_tensors = node->saves_tensors;
  cs->next_edges.push_back(gradient_edge(Tensor(impl->view_base)));
  for (size_t i = 1; i < node->next_edges.size(); ++i) cs->next_edges.push_back(node->next_edges[i]);
  node->next_edges.clear();
  cs->fn = std::move(node);
  base->grad_fn = cs;
  ++base->history;
  auto v = std::make_shared<AsStridedBackward0>();
  v->base = cs->base;
  v->view = cs->view;
  v->next_edges.push_back({cs, base->dtype});
  impl->grad_fn = std::move(v);
  impl->history = base->history;
}

// ---------------------------------------------------------------------------------------------
// The in-place ops' nodes (names as PyTorch's grad_fn.name(); each one's inputs are
// {self, operands...}).
// ---------------------------------------------------------------------------------------------

/// self.add_(other, alpha), self.sub_(other, alpha) (alpha negated):  y = self + alpha * other
///   =>  d self = dy,  d other = alpha * dy summed to other's shape
struct AddInplace : Node {
  Shape other_shape;
  double alpha = 1;
  const char* node_name = "AddBackward0";
  std::string name() const override { return node_name; }
  static std::shared_ptr<Node> make(const Tensor& other, double alpha, const char* node_name) {
    auto n = std::make_shared<AddInplace>();
    n->other_shape = other.sizes();
    n->alpha = alpha;
    n->node_name = node_name;
    return n;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    return {dy, ops::sum_to(alpha == 1 ? dy : grad_math::scale(dy, alpha), other_shape)};
  }
};

/// self.mul_(other): y = self * other  =>  d self = dy * other,  d other = dy * self_old (summed)
/// self_old is a copy of self taken before the write (PyTorch saves the original self too).
struct MulInplace : Node {
  Tensor other, self_old;
  Shape other_shape;
  std::string name() const override { return "MulBackward0"; }
  static std::shared_ptr<Node> make(const Tensor& self, const Tensor& other) {
    auto n = std::make_shared<MulInplace>();
    n->other_shape = other.sizes();
    if (self.requires_grad()) n->other = n->save(other);
    if (other.requires_grad()) n->self_old = ops::clone(self);
    n->saves_tensors = true;
    return n;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor ds, dother;
    if (other.defined()) ds = grad_math::mul(dy, other);
    if (self_old.defined()) dother = ops::sum_to(grad_math::mul(dy, self_old), other_shape);
    return {ds, dother};
  }
  void release_saved() override { other = self_old = Tensor(); }
};

/// self.div_(other): y = self / other  =>  d self = dy / other,  d other = -dy * self_old / other^2
struct DivInplace : Node {
  Tensor other, self_old;
  Shape other_shape;
  std::string name() const override { return "DivBackward0"; }
  static std::shared_ptr<Node> make(const Tensor& self, const Tensor& other) {
    auto n = std::make_shared<DivInplace>();
    n->other_shape = other.sizes();
    n->other = n->save(other);
    if (other.requires_grad()) n->self_old = ops::clone(self);
    return n;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor ds = grad_math::div(dy, other), dother;
    if (self_old.defined())
      dother = ops::sum_to(grad_math::div(grad_math::mul(grad_math::neg(dy), self_old), grad_math::mul(other, other)),
                           other_shape);
    return {ds, dother};
  }
  void release_saved() override { other = self_old = Tensor(); }
};

/// self.addcmul_(t1, t2, value): y = self + value * t1 * t2
///   =>  d self = dy,  d t1 = value * dy * t2,  d t2 = value * dy * t1   (each summed to its shape)
/// self.addcdiv_(t1, t2, value): y = self + value * t1 / t2
///   =>  d self = dy,  d t1 = value * dy / t2,  d t2 = -value * dy * t1 / t2^2
struct AddcInplace : Node {
  Tensor t1, t2;
  Shape s1, s2;
  double value = 1;
  bool div = false;
  std::string name() const override { return div ? "AddcdivBackward0" : "AddcmulBackward0"; }
  static std::shared_ptr<Node> make(const Tensor& t1, const Tensor& t2, double value, bool div) {
    auto n = std::make_shared<AddcInplace>();
    n->s1 = t1.sizes();
    n->s2 = t2.sizes();
    n->value = value;
    n->div = div;
    if (t2.requires_grad()) n->t1 = n->save(t1);
    if (t1.requires_grad() || (div && t2.requires_grad())) n->t2 = n->save(t2);
    n->saves_tensors = true;
    return n;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    Tensor g = grad_math::scale(dy, value), d1, d2;
    if (!div) {
      if (t2.defined()) d1 = ops::sum_to(grad_math::mul(g, t2), s1);
      if (t1.defined()) d2 = ops::sum_to(grad_math::mul(g, t1), s2);
    } else {
      if (t2.defined()) d1 = ops::sum_to(grad_math::div(g, t2), s1);
      if (t1.defined()) d2 = ops::sum_to(grad_math::div(grad_math::mul(grad_math::neg(g), t1), grad_math::mul(t2, t2)), s2);
    }
    return {dy, d1, d2};
  }
  void release_saved() override { t1 = t2 = Tensor(); }
};

/// zero_, fill_, uniform_, normal_: y does not depend on the old self  =>  d self = 0
struct OverwriteInplace : Node {
  const char* node_name = "ZeroBackward0";
  std::string name() const override { return node_name; }
  static std::shared_ptr<Node> make(const char* node_name) {
    auto n = std::make_shared<OverwriteInplace>();
    n->node_name = node_name;
    return n;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    return {zeros(dy.sizes(), TensorOptions(dy.dtype()).device(dy.device()))};
  }
};

/// self.copy_(src): y = src broadcast to self's shape  =>  d self = 0,  d src = dy summed to src's shape
struct CopyInplace : Node {
  Shape src_shape;
  std::string name() const override { return "torch::autograd::CopyBackwards"; }
  static std::shared_ptr<Node> make(const Tensor& src) {
    auto n = std::make_shared<CopyInplace>();
    n->src_shape = src.sizes();
    return n;
  }
  std::vector<Tensor> backward(const Tensor& dy) override {
    return {zeros(dy.sizes(), TensorOptions(dy.dtype()).device(dy.device())), ops::sum_to(dy, src_shape)};
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd
