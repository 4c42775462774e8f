// tinytorch/autograd/node.hpp — the autograd graph: Node (grad_fn), Edge, AccumulateGrad.
//
// Every differentiable op that sees an input requiring grad records a Node for its output:
//   out.grad_fn = node;  node->next_edges[i] = edge to input i's own grad_fn (or, for a leaf,
//   to that leaf's AccumulateGrad node; an empty edge when input i needs no gradient).
// Backward walks the graph from the loss: node->apply(d loss/d out), the engine's one entry, calls
// the node's backward(d loss/d out), which returns d loss/d input_i for each input, which flows along next_edges[i]. AccumulateGrad adds what reaches a leaf into
// leaf.grad, then fires the leaf's post-accumulate-grad hooks.
// Each node has exactly one output (multi-output ops such as chunk are built from one-output
// views), which keeps the engine a short read.
// Saved tensors and in-place ops: a node keeps what its backward needs through save(t), which
// remembers t's version (core/storage.hpp). Before apply() the engine compares it with the
// current version and raises PyTorch's "one of the variables needed for gradient computation has
// been modified by an inplace operation" instead of computing a wrong gradient from changed data.
// In-place ops themselves are recorded by autograd/inplace.hpp.
// Names print as PyTorch's: MulBackward0, AddmmBackward0, AccumulateGrad.
// Chapter: chapters/02-autograd.md; model: karpathy/micrograd engine.py.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tinytorch/tensor.hpp"
#include "tinytorch/autograd/grad_mode.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

struct Node;

/// Where a gradient goes next: into `fn` (nullptr: nowhere, the input needs no gradient).
/// `dtype` is the input's dtype: the engine casts the gradient to it (as PyTorch's
/// validate_outputs), so float32 * float64 hands the float32 side a float32 gradient.
struct Edge {
  std::shared_ptr<Node> fn;
  DType dtype = kFloat32;
};

/// What a node remembers about a tensor it saved for backward, to detect a later in-place write
/// (PyTorch's SavedVariable, minus the data: the node keeps that in its own fields).
struct SavedVersion {
  std::weak_ptr<Storage> storage;  ///< expired: nobody can write to it any more
  uint32_t version = 0;            ///< the storage's version when saved
  Shape shape;
  DType dtype = kFloat32;
  bool is_output = false;  ///< an output of the saving node (then named after that node) ...
  bool output_is_leaf = false;  ///< ... unless it needed no gradient (as max's indices)
  int output_nr = 0;
  std::weak_ptr<TensorImpl> original;  ///< an input: named after its grad_fn when checked ...
  std::weak_ptr<Node> grad_fn_at_save;  ///< ... or, once it is gone, after its grad_fn at save time
};

struct Node {
  /// Frees the graph behind this node iteratively. Plain shared_ptr destruction would recurse
  /// once per node (~Node -> next_edges -> ~Node ...) and overflow the stack on a long chain such
  /// as `for (...) y = y + 1.0;`. Instead, children that only this node owns are moved into a
  /// local stack, and each one popped from it hands over its own sole-owned children before it
  /// dies, so every destructor call is shallow. (PyTorch's deleteNode does the same.)
  virtual ~Node() {
    std::vector<std::shared_ptr<Node>> stack;
    take_sole_children(*this, stack);
    while (!stack.empty()) {
      std::shared_ptr<Node> n = std::move(stack.back());
      stack.pop_back();
      take_sole_children(*n, stack);
    }  // n dies here with its sole-owned children already moved out
  }
  /// What the engine calls (PyTorch's Node::operator()): the node's backward(grad_output).
  std::vector<Tensor> apply(const Tensor& grad_output) { return backward(grad_output); }
  /// grad_output: d loss / d (this node's output). Returns d loss / d input_i, one per next_edge
  /// (an undefined Tensor where no gradient is needed). Each op's node writes it beside its
  /// static forward() (autograd/functions/), as torch.autograd.Function's forward/backward pair.
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;
  /// PyTorch's class name for this node, e.g. "MulBackward0".
  virtual std::string name() const = 0;
  /// Frees saved tensors after a backward without retain_graph.
  virtual void release_saved() {}

  /// Saves `t` for backward: returns t.detach() for the node to keep and remembers t's version,
  /// which check_saved_versions() compares before apply(). `is_output`: t is this node's output
  /// number `output_nr` (as PyTorch's SavedVariable(result, true)); save it after record() made
  /// this node its grad_fn, so that the error message names the node. A node may also call it just
  /// to watch an input it does not keep (PyTorch would keep it), so that an in-place change of
  /// that input still raises as in PyTorch (watch() does that without making the detached copy).
  Tensor save(const Tensor& t, bool is_output = false, int output_nr = 0) {
    watch(t, is_output, output_nr);
    return t.defined() ? t.detach() : t;
  }
  /// The bookkeeping half of save(): remembers t's version for check_saved_versions() without
  /// keeping t, for a node that watches a tensor it does not read back.
  void watch(const Tensor& t, bool is_output = false, int output_nr = 0) {
    saves_tensors = true;
    if (!t.defined()) return;
    SavedVersion s;
    s.storage = t.impl()->storage;
    s.version = t.impl()->storage->version();
    s.shape = t.sizes();
    s.dtype = t.dtype();
    s.is_output = is_output;
    s.output_nr = output_nr;
    s.output_is_leaf = t.impl()->grad_fn == nullptr;
    if (!is_output) {
      s.original = t.impl_ptr();
      s.grad_fn_at_save = t.impl()->grad_fn;
    }
    if (saved_versions.empty()) saved_versions.reserve(2);  // most nodes save one or two tensors
    saved_versions.push_back(std::move(s));
  }
  /// Throws PyTorch's error when a tensor saved by save() was written in place since.
  void check_saved_versions() const {
    for (const SavedVersion& s : saved_versions) {
      std::shared_ptr<Storage> storage = s.storage.lock();
      if (!storage || storage->version() == s.version) continue;
      std::string fn;
      if (s.is_output) {
        fn = s.output_is_leaf ? "" : name();
      } else {
        auto orig = s.original.lock();
        std::shared_ptr<Node> g = orig ? orig->grad_fn : s.grad_fn_at_save.lock();
        if (g) fn = g->name();
      }
      std::string which = fn.empty() ? "" : ", which is output " + std::to_string(s.output_nr) + " of " + fn + ",";
      TT_CHECK(false, "one of the variables needed for gradient computation has been modified by an inplace "
               "operation: [", tensor_type_name(s.dtype), " ", shape_str(s.shape), "]", which, " is at version ",
               storage->version(), "; expected version ", s.version, " instead. Hint: the tensor was changed in "
               "place (an in-place op, a write through a view or detach(), an optimizer step) after the forward "
               "pass saved it for backward; clone() it before changing it, or change it after backward()");
    }
  }

  std::vector<Edge> next_edges;
  std::vector<TensorHook> hooks;  ///< register_hook on the tensor this node produced
  bool saves_tensors = false;     ///< set by nodes that keep inputs for backward
  bool released = false;          ///< saved tensors were freed by an earlier backward
  std::vector<SavedVersion> saved_versions;  ///< filled by save()

  // Engine scratch space, valid during one backward pass.
  Tensor grad_buffer;
  uint64_t visit_mark = 0;  ///< the number of the last backward pass that reached this node

 private:
  // Moves the children that `node` alone keeps alive into `stack` (shared children stay: dropping
  // this reference does not destroy them). No allocation when there are none, one (room for 8)
  // for most graphs rather than one per doubling.
  static void take_sole_children(Node& node, std::vector<std::shared_ptr<Node>>& stack) {
    for (Edge& e : node.next_edges) {
      if (!e.fn || e.fn.use_count() != 1) continue;
      if (stack.capacity() == 0) stack.reserve(8);
      stack.push_back(std::move(e.fn));
    }
  }
};

/// The sink for a leaf: accumulates into leaf.grad (a leaf used twice gets one AccumulateGrad,
/// so the engine sums both contributions before they land).
struct AccumulateGrad : Node {
  std::weak_ptr<TensorImpl> leaf;
  std::string name() const override { return "torch::autograd::AccumulateGrad"; }
  std::vector<Tensor> backward(const Tensor& grad) override;  // defined in engine.hpp
};

/// True when grad mode is on and any input requires grad: the op must record a node.
inline bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

/// True on the threads of parallel::parallel_apply while they run replicas (set by
/// ParallelRegion): several threads may then build graphs over the same leaf at once.
inline bool& in_parallel_region() {
  thread_local bool on = false;
  return on;
}
/// RAII: marks this thread as running in parallel with others over shared leaves.
class ParallelRegion {
 public:
  ParallelRegion() : prev_(in_parallel_region()) { in_parallel_region() = true; }
  ~ParallelRegion() { in_parallel_region() = prev_; }
  ParallelRegion(const ParallelRegion&) = delete;
  ParallelRegion& operator=(const ParallelRegion&) = delete;

 private:
  bool prev_;
};

/// The AccumulateGrad node of a leaf that requires grad (created once, then cached weakly).
/// Inside a ParallelRegion (DataParallel's replicas using a leaf that is not a parameter) the
/// cache is read and written under a lock, so every thread gets the one node.
inline std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  TensorImpl* impl = leaf.impl();
  auto get_or_create = [&] {
    if (auto existing = impl->grad_accumulator.lock()) return std::shared_ptr<Node>(existing);
    auto acc = std::make_shared<AccumulateGrad>();
    acc->leaf = leaf.impl_ptr();
    impl->grad_accumulator = acc;
    return std::shared_ptr<Node>(acc);
  };
  if (!in_parallel_region()) return get_or_create();
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  return get_or_create();
}

/// The edge a gradient for `t` should follow. (A view made under NoGradGuard of a tensor that
/// requires grad reports requires_grad() but has no grad_fn and is no leaf of its own: no edge,
/// as PyTorch's grad_accumulator, which looks at the tensor's own flag.)
inline Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {nullptr};
  if (t.grad_fn()) return {t.grad_fn(), t.dtype()};
  if (!t.impl()->requires_grad) return {nullptr};
  return {grad_accumulator(t), t.dtype()};
}

/// Records an in-place write to `t` that did not go through one of Tensor's in-place methods
/// (raw-pointer kernels such as the optimizers' fast paths): bumps t's version counter
/// (PyTorch's torch.autograd.graph.increment_version).
inline void increment_version(const Tensor& t) { t.impl()->storage->bump_version(); }

/// Connects `node` to `inputs` and makes it `out`'s grad_fn. Returns out.
inline Tensor set_history(Tensor out, std::shared_ptr<Node> node, std::initializer_list<const Tensor*> inputs) {
  node->next_edges.reserve(inputs.size());
  for (const Tensor* t : inputs) node->next_edges.push_back(gradient_edge(*t));
  out.impl()->grad_fn = std::move(node);
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::autograd
