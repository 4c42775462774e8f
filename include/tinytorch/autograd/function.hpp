// tinytorch/autograd/function.hpp — custom autograd functions: a forward and a backward written
// outside the library (torch.autograd.Function; in C++, libtorch's torch::autograd::Function<T>).
//
//   struct Exp : tinytorch::autograd::Function<Exp> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {   // runs with grad mode off
//       Tensor y = x.exp();
//       ctx->save_for_backward({y});
//       return y;
//     }
//     static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
//       Tensor y = ctx->get_saved_variables()[0];
//       return {grad_outputs[0] * y};                                    // d loss/d x = dy * e^x
//     }
//   };
//   Tensor y = Exp::apply(x);   // y.grad_fn() is an "ExpBackward" node when x requires grad
//
// apply(args...) runs T::forward under NoGradGuard; when grad mode is on and a Tensor argument
// requires grad, it makes the result the output of a node whose edges lead to the Tensor
// arguments (a result that is one of the inputs comes back as a copy); at backward the node calls
// T::backward(ctx, {d loss/d result}), which returns one gradient per argument of forward
// (undefined for a non-Tensor argument or one that needs none: ctx->needs_input_grad(i)). Each
// gradient must have its input's exact shape; one output per function; saved tensors are
// version-checked (node.hpp); no double backward. The rules and PyTorch's error messages, with
// where tinytorch differs: chapters/02-autograd.md, 2.8.
// Chapter: chapters/02-autograd.md (2.8); lab 02 uses it. Reference: PyTorch's
// torch/csrc/autograd/custom_function.h (Function<T>, AutogradContext) and torch.autograd.Function.
#pragma once

#include <any>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>
#if defined(__GNUG__)
#include <cxxabi.h>
#endif

#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

using tensor_list = std::vector<Tensor>;

/// What forward leaves for backward (libtorch's AutogradContext, Python's ctx).
class AutogradContext {
 public:
  /// Keeps tensors for backward (inputs or the output). Call once, from forward.
  void save_for_backward(tensor_list to_save) { to_save_ = std::move(to_save); }
  /// The tensors save_for_backward kept, in order (detached). Throws after the graph was freed.
  tensor_list get_saved_variables() const {
    TT_CHECK(!released_, "Trying to backward through the graph a second time (or directly access saved tensors "
             "after they have already been freed): call backward with retain_graph=true the first time");
    return saved_;
  }
  /// Marks outputs that have no gradient (an index, a mask): they do not require grad.
  void mark_non_differentiable(const tensor_list& outputs) {
    for (const Tensor& t : outputs)
      if (t.defined()) non_differentiable_.push_back(t.impl());
  }
  /// Whether forward argument `index` (counting every argument, Tensor or not) needs a gradient.
  bool needs_input_grad(size_t index) const { return index < needs_input_grad_.size() && needs_input_grad_[index]; }
  /// Non-tensor values for backward (libtorch's saved_data holds IValues; here numbers).
  std::map<std::string, double> saved_data;
  /// Other non-tensor things backward needs, e.g. the process group of tensor_parallel.hpp's
  /// operators: ctx->saved_objects["group"] = group; later
  /// std::any_cast<ProcessGroup*>(ctx->saved_objects.at("group")). (Python: ctx.group = group;
  /// libtorch: a custom class in saved_data.) The context does not own what a pointer points to.
  std::map<std::string, std::any> saved_objects;

 private:
  template <class T> friend struct Function;
  template <class T> friend struct CppNode;
  tensor_list to_save_;                        // what forward asked for, before apply() saves it
  tensor_list saved_;                          // what backward reads
  std::vector<TensorImpl*> non_differentiable_;
  std::vector<bool> needs_input_grad_;
  bool released_ = false;
};

// (Not `detail`: a nested autograd::detail would hide tinytorch::detail from the other autograd headers.)
namespace function_impl {
/// A type's name for messages: "Exp" for mylib::Exp (demangled where the compiler allows).
template <class T>
std::string type_name() {
  const char* raw = typeid(T).name();
  std::string name = raw;
#if defined(__GNUG__)
  int status = 0;
  char* d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  if (status == 0 && d != nullptr) name = d;
  std::free(d);
#endif
  // The unqualified name, as Python's type(f).__name__: drop namespaces outside any <...>.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (depth == 0 && name[i] == ':' && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}
}  // namespace function_impl

/// The node apply() records: its backward calls T::backward (libtorch's CppNode<T>).
template <class T>
struct CppNode : Node {
  AutogradContext ctx;
  std::vector<bool> is_tensor_input;  // per forward argument
  std::vector<Shape> input_shapes;    // per forward argument (empty for non-tensors)
  /// "ExpBackward" for Exp: a field, so that tools/gdb's printer can read it from memory.
  std::string node_name = function_impl::type_name<T>() + "Backward";

  std::string name() const override { return node_name; }

  std::vector<Tensor> backward(const Tensor& grad_output) override {
    tensor_list grads = T::backward(&ctx, tensor_list{grad_output});
    const size_t expected = is_tensor_input.size();
    TT_CHECK(grads.size() == expected, "function ", name(), " returned an incorrect number of gradients (expected ",
             expected, ", got ", grads.size(), ")");
    std::vector<Tensor> out;  // one per tensor input, matching next_edges
    for (size_t i = 0; i < expected; ++i) {
      if (!is_tensor_input[i]) {
        TT_CHECK(!grads[i].defined(), "function ", name(), " returned a gradient different than None at position ",
                 i + 1, ", but the corresponding forward input was not a Variable");
        continue;
      }
      if (grads[i].defined())
        TT_CHECK(grads[i].sizes() == input_shapes[i], "Function ", name(), " returned an invalid gradient at index ",
                 i, " - got ", shape_str(grads[i].sizes()), " but expected shape compatible with ",
                 shape_str(input_shapes[i]), " (tinytorch requires the input's exact shape)");
      out.push_back(ctx.needs_input_grad(i) ? grads[i] : Tensor());
    }
    return out;
  }

  void release_saved() override {
    ctx.saved_.clear();
    ctx.released_ = true;
  }
};

/// Base of a custom function T (CRTP, as libtorch's): T defines static forward(AutogradContext*,
/// args...) -> Tensor and static backward(AutogradContext*, tensor_list) -> tensor_list; users
/// call T::apply(args...).
template <class T>
struct Function {
  template <class... Args>
  static Tensor apply(Args&&... args) {
    auto node = std::make_shared<CppNode<T>>();
    std::vector<Tensor> inputs;  // the Tensor arguments, in order (copies: forward may move args)
    (note_argument(*node, inputs, args), ...);
    bool any_grad = false;
    for (size_t i = 0; i < node->is_tensor_input.size(); ++i) any_grad = any_grad || node->ctx.needs_input_grad(i);

    Tensor out;
    {
      NoGradGuard no_grad;
      out = T::forward(&node->ctx, std::forward<Args>(args)...);
    }
    TT_CHECK(out.defined(), function_impl::type_name<T>(), "::apply: forward returned an undefined tensor");
    AutogradContext& ctx = node->ctx;
    TensorImpl* const produced = out.impl();
    for (const Tensor& in : inputs)
      if (in.impl() == produced) {  // never rewrite an input's own history, nor let y.mul_() change x
        NoGradGuard no_grad;
        out = out.clone();
      }
    bool differentiable = any_grad;
    for (TensorImpl* nd : ctx.non_differentiable_)
      if (nd == produced) differentiable = false;
    if (differentiable) {
      node->next_edges.reserve(inputs.size());
      for (const Tensor& t : inputs) node->next_edges.push_back(gradient_edge(t));
      out.impl()->grad_fn = node;
    }
    // Saved tensors: detached copies whose versions are watched (node.hpp).
    for (const Tensor& t : ctx.to_save_) {
      const bool is_output = t.defined() && t.impl() == produced;
      ctx.saved_.push_back(is_output ? node->save(out, /*is_output=*/true) : node->save(t));
    }
    ctx.to_save_.clear();
    return out;
  }

 private:
  template <class A>
  static void note_argument(CppNode<T>& node, std::vector<Tensor>& inputs, const A& arg) {
    if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
      node.is_tensor_input.push_back(true);
      node.input_shapes.push_back(arg.defined() ? arg.sizes() : Shape{});
      node.ctx.needs_input_grad_.push_back(GradMode::is_enabled() && arg.defined() && arg.requires_grad());
      inputs.push_back(arg);
    } else {
      node.is_tensor_input.push_back(false);
      node.input_shapes.push_back(Shape{});
      node.ctx.needs_input_grad_.push_back(false);
    }
  }
};

}  TT_NAMESPACE_END  // namespace tinytorch::autograd
