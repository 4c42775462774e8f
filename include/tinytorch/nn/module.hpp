// tinytorch/nn/module.hpp — nn::Module: parameters, buffers, submodules, train/eval, zero_grad.
//
// A Module owns named Tensors (parameters: trained; buffers: state such as running stats) and
// named child modules. Names are dotted paths, as PyTorch prints them:
//   Sequential{ "0": Linear{ weight, bias }, ... }  ->  "0.weight", "0.bias", ...
// Registration order is kept: parameters() lists them in that order (DDP's buckets depend on it).
// Subclasses implement forward(x); calling the module, model(x), calls forward.
// clone() copies a module without re-running its constructor (no random draws): every built-in
// module implements it; DataParallel's replicate() needs it (see "Cloning" below).
// Reference: torch.nn.Module (PyTorch 2.x: zero_grad() sets gradients to None by default).
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tinytorch/functional.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace nn {

class Module : public std::enable_shared_from_this<Module> {
 public:
  virtual ~Module() = default;

  /// The computation. x: the input batch; shapes are documented by each module.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  /// A recursive copy of this module (libtorch's Module::clone): the same class, settings and
  /// training flag; every parameter and buffer a new tensor holding a copy of the values (same
  /// requires_grad, no .grad); every child module cloned in turn. Constructors are not re-run,
  /// so nothing is drawn from a generator. Built-in modules implement it; a module of yours
  /// implements it the same way, in three lines:
  ///   std::shared_ptr<Module> clone() const override {
  ///     auto m = clone_as<MyNet>();                    // copy-constructs, then separates
  ///     m->fc1 = m->get_submodule<nn::Linear>("fc1");  // re-point members at the copies
  ///     return m;
  ///   }
  /// Throws tinytorch::Error "<Name> does not implement clone(); DataParallel needs it" otherwise.
  virtual std::shared_ptr<Module> clone() const {
    throw Error(class_name() + " does not implement clone(); DataParallel needs it (see nn/module.hpp, clone)");
  }

  /// PyTorch's class name, e.g. "Linear"; used by repr().
  virtual std::string name() const { return "Module"; }
  /// The text inside the parentheses of repr(), e.g. "in_features=2, out_features=1, bias=True".
  virtual std::string extra_repr() const { return ""; }

  /// Adds a parameter (a leaf that requires grad unless told otherwise). Throws on a duplicate
  /// or dotted name. Returns the stored handle.
  Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  /// Adds a buffer (state that is saved and broadcast by DDP, but not trained).
  Tensor& register_buffer(const std::string& name, Tensor t);
  /// Adds a child module; its parameters appear as "name.<param>". Returns the module.
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    check_name(name, "register_module");
    check_unique(name, "register_module");
    TT_CHECK(m != nullptr, "register_module: module '", name, "' is null");
    children_.emplace_back(name, m);
    return m;
  }

  /// Puts `m` where the child module `name` was, keeping its place in the order (libtorch's
  /// Module::replace_module; PyTorch: assigning model.name = m). Returns `m`; members that held
  /// the old child must be re-pointed by the caller. Throws tinytorch::Error when there is no
  /// child `name`, or `m` is null.
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> m) {
    TT_CHECK(m != nullptr, "replace_module: module '", name, "' is null");
    for (auto& child : children_)
      if (child.first == name) {
        child.second = m;
        return m;
      }
    TT_CHECK(false, "replace_module: ", this->name(), " has no submodule `", name, "`");
    return m;
  }

  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const { return values(named_parameters(recurse)); }
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const { return values(named_buffers(recurse)); }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }

  /// The submodule at a dotted path ("0", "encoder.fc1"), as an M (torch.nn.Module.get_submodule).
  /// Throws tinytorch::Error naming the path when there is none, or it is not an M.
  template <class M = Module>
  std::shared_ptr<M> get_submodule(const std::string& target) const {
    const Module* owner = this;
    std::shared_ptr<Module> found;
    std::istringstream path(target);
    for (std::string item; std::getline(path, item, '.');) {
      found = nullptr;
      for (const auto& e : owner->children_)
        if (e.first == item) found = e.second;
      TT_CHECK(found != nullptr, "get_submodule: ", owner->name(), " has no submodule `", item, "` (in `", target, "`)");
      owner = found.get();
    }
    TT_CHECK(found != nullptr, "get_submodule: expected a submodule name, got `", target, "`");
    auto typed = std::dynamic_pointer_cast<M>(found);
    TT_CHECK(typed != nullptr, "get_submodule: `", target, "` is a ", found->name(), ", not the requested type");
    return typed;
  }
  /// The parameter at a dotted path ("weight", "0.bias"), as torch.nn.Module.get_parameter.
  /// Throws tinytorch::Error naming the path when there is none.
  Tensor get_parameter(const std::string& target) const { return get_tensor(target, true); }
  /// The buffer at a dotted path, as torch.nn.Module.get_buffer. Throws when there is none.
  Tensor get_buffer(const std::string& target) const { return get_tensor(target, false); }

  /// Parameters then buffers, by dotted name (the tensors themselves, not copies).
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  /// Copies values into this module's tensors by name. Throws naming the first missing,
  /// unexpected or mis-shaped entry (strict, as PyTorch's default).
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd);

  /// Training mode (the default) or evaluation mode, for this module and all children.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // ---- devices -------------------------------------------------------------------------------
  /// Moves every parameter, buffer and parameter gradient of this module and its children to
  /// `device`, IN PLACE (torch.nn.Module.to(device), whose _apply sets param.data): each
  /// parameter keeps its identity (the same TensorImpl, so `Linear::weight`, handles taken from
  /// parameters() earlier and an optimizer's params all see the move) and gets a contiguous copy
  /// of its values on `device`; requires_grad is kept. Tensors already there are untouched. As in
  /// PyTorch, build the optimizer after moving the model: optimizer state made before the move
  /// stays where it was. Returns *this. Errors: those of Tensor::to(Device) (no CUDA backend in
  /// this build, a device index out of range).
  Module& to(Device device);
  /// Converts every floating-point parameter, buffer and parameter gradient to `dtype` (a
  /// floating dtype: float32, float64, float16, bfloat16), IN PLACE as to(Device) above
  /// (torch.nn.Module.to(dtype), .half(), .bfloat16()); integer buffers stay as they are. Values
  /// round to nearest even. Build the optimizer afterwards. Returns *this.
  /// Throws tinytorch::Error for an integer dtype (PyTorch's "nn.Module.to only accepts floating
  /// point or complex dtypes, but got desired dtype=torch.int64").
  Module& to(DType dtype);
  /// to(Device::cuda(index)) (torch.nn.Module.cuda).
  Module& cuda(int index = 0) { return to(Device::cuda(index)); }
  /// to(Device::cpu()) (torch.nn.Module.cpu).
  Module& cpu() { return to(Device::cpu()); }

  /// Resets gradients of all parameters: to undefined (set_to_none=true, PyTorch 2.x default)
  /// or to zeros.
  void zero_grad(bool set_to_none = true);

  /// PyTorch's repr, e.g. "Sequential(\n  (0): Linear(in_features=784, ...)\n  (1): ReLU()\n)".
  std::string repr() const;

 protected:
  /// For clone(): throws unless the member handle `member` is this module's registered
  /// parameter or buffer `name` (or both are absent). A member re-assigned after construction
  /// (`b->weight = a->weight`, an attempt to tie weights) is not what parameters() lists, so a
  /// clone could not follow it; an error is better than a replica computing something else.
  void check_member(const Tensor& member, const std::string& name) const;
  /// For clone(): copy-constructs an M from *this (which must be an M), then gives the copy its
  /// own tensors and children (see separate_after_copy). Members that point at parameters or
  /// children (Linear::weight, MyNet::fc1) still point at the original's afterwards: clone()
  /// re-reads them with get_parameter() / get_buffer() / get_submodule().
  template <class M>
  std::shared_ptr<M> clone_as() const {
    TT_CHECK(typeid(*this) == typeid(M), cpp_class_name(), " does not implement clone(); DataParallel needs it (its class "
             "derives from one that does, whose clone() would drop the derived part)");
    auto m = std::make_shared<M>(static_cast<const M&>(*this));
    m->separate_after_copy();
    return m;
  }
 private:
  /// name(), or the C++ class name when a subclass did not override name() (for error messages).
  std::string class_name() const { return name() != "Module" ? name() : cpp_class_name(); }
  /// This object's C++ class, demangled ("MyNet", "(anonymous namespace)::MyNet").
  std::string cpp_class_name() const;
  /// This module's own parameter (param) or buffer `name`; undefined when there is none.
  Tensor own_tensor(const std::string& name, bool param) const;
  Tensor get_tensor(const std::string& target, bool param) const;
  /// After a member-wise copy, the copy still shares the original's tensor handles and child
  /// objects: replace each tensor by a new one and each child by its clone().
  /// Normally the new tensor holds a copy of the values. Under tinytorch::detail::ReplicateClone
  /// (parallel::replicate) it is a new handle on the *same* storage instead: a replica computes
  /// with the original's weights without copying them (on one device; another device copies).
  void separate_after_copy();

  static void check_name(const std::string& name, const char* op);
  /// Parameters, buffers and children share one namespace (as attributes do in PyTorch).
  void check_unique(const std::string& name, const char* op) const;
  static std::vector<Tensor> values(const std::vector<std::pair<std::string, Tensor>>& v);
  void collect(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix, bool recurse,
               bool params) const;

  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

inline std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  TT_NAMESPACE_END  // namespace tinytorch::nn

TT_NAMESPACE_BEGIN namespace detail {
/// RAII, for parallel::replicate: while alive, Module::clone() on this thread gives the copy new
/// tensor handles on the original's storage instead of copies of the values.
class ReplicateClone {
 public:
  ReplicateClone() : prev_(flag()) { flag() = true; }
  ~ReplicateClone() { flag() = prev_; }
  ReplicateClone(const ReplicateClone&) = delete;
  ReplicateClone& operator=(const ReplicateClone&) = delete;
  static bool active() { return flag(); }

 private:
  static bool& flag() {
    thread_local bool share = false;
    return share;
  }
  bool prev_;
};

/// A new leaf handle for a module tensor being cloned: same storage (a new TensorImpl over it)
/// or, by default, a copy of the values; requires_grad kept, no .grad, no hooks, no history.
TT_DECL Tensor clone_module_tensor(const Tensor& t);
}  TT_NAMESPACE_END  // namespace tinytorch::detail

TT_NAMESPACE_BEGIN namespace nn {

inline void Module::separate_after_copy() {
  for (auto& e : params_) e.second = detail::clone_module_tensor(e.second);
  for (auto& e : buffers_) e.second = detail::clone_module_tensor(e.second);
  for (auto& e : children_) e.second = e.second->clone();
}

}  TT_NAMESPACE_END  // namespace tinytorch::nn

#if TT_HEADER_ONLY
#include "tinytorch/nn/module.ipp"
#endif
