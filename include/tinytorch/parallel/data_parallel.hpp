// tinytorch/parallel/data_parallel.hpp — nn::DataParallel: one process, one replica of the model
// per device, the batch split between them (torch.nn.DataParallel).
//   auto dp = std::make_shared<nn::DataParallel>(model, std::vector<Device>{Device::cpu(), Device::cpu()});
//   Tensor y = dp->forward(x);             // x: (B, ...) -> y: (B, ...) on output_device
//   Tensor z = dp->forward<MyModel>(x, mask, 0.5);   // several arguments: MyModel::forward(x, mask, 0.5)
//   loss_fn(y, target).backward();         // model's .grad = the full-batch gradient
//   optimizer.step();                      // steps the one original model
// forward(x), every call: 1. scatter x into chunks (torch.chunk sizes, k <= n devices), chunk i to
// device i; 2. replicate the module (clones whose parameters lead back to the original's through
// BroadcastBackward); 3. parallel_apply y_i = replica_i(x_i), a thread per replica; 4. gather
// y = cat(y_i) on output_device. Backward slices dy back and sums each replica's parameter
// gradients into the original's .grad (not divided by k). One device, or none: calls the module.
// forward<M>(args...) calls M::forward(args...) on each replica (C++ has no **kwargs, so the
// module's class is named): Tensor arguments, and each element of a std::vector<Tensor>, are
// scattered along dim; every other argument goes to every replica as is. Where tinytorch differs
// from PyTorch: Tensor arguments of different sizes along dim throw (PyTorch silently drops the
// longer ones' extra chunks); CPU "devices" are allowed ({cpu, cpu}: two replicas in two threads),
// where PyTorch needs GPUs; replica i draws from generator i, seeded with the default seed + i
// (PyTorch gives every GPU the same seed), so Dropout differs between replicas and manual_seed
// repeats runs. Calls of forward from several threads run one after the other; backward passes
// through one model must not overlap. Why it loses against DistributedDataParallel (replicas
// rebuilt every step, everything but their forwards on one thread): chapter 05, bench_dp.
// Reference: torch/nn/parallel/data_parallel.py. Chapter: chapters/05-data-parallel.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinytorch/parallel/parallel_apply.hpp"
#include "tinytorch/parallel/replicate.hpp"
#include "tinytorch/parallel/scatter_gather.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace parallel::detail {

/// One argument of DataParallel::forward<M>, split for the replicas: get(i) is what replica i
/// gets; count() how many replicas the argument can feed (no limit for a non-tensor).
///   Tensor                chunk i, on device i
///   std::vector<Tensor>   the vector of each element's chunk i (PyTorch's scatter recurses into lists)
///   anything else         the one object every replica gets
template <class A>
struct ScatteredArg {
  const A& value;
  const A& get(size_t) const { return value; }
  size_t count() const { return SIZE_MAX; }
};
template <>
struct ScatteredArg<Tensor> {
  std::vector<Tensor> chunks;
  const Tensor& get(size_t i) const { return chunks[i]; }
  size_t count() const { return chunks.size(); }
};
template <>
struct ScatteredArg<std::vector<Tensor>> {
  std::vector<std::vector<Tensor>> per_replica;  // [replica][element]; empty for an empty vector
  bool empty_input = false;
  std::vector<Tensor> get(size_t i) const { return empty_input ? std::vector<Tensor>{} : per_replica[i]; }
  size_t count() const { return empty_input ? SIZE_MAX : per_replica.size(); }
};
template <class A>
ScatteredArg<A> scatter_arg(const A& a, const std::vector<Device>&, int64_t) { return {a}; }
inline ScatteredArg<Tensor> scatter_arg(const Tensor& t, const std::vector<Device>& devices, int64_t dim) {
  return {scatter(t, devices, dim)};
}
inline ScatteredArg<std::vector<Tensor>> scatter_arg(const std::vector<Tensor>& ts, const std::vector<Device>& devices,
                                                     int64_t dim) {
  ScatteredArg<std::vector<Tensor>> out;
  out.empty_input = ts.empty();
  for (const Tensor& t : ts) {  // every element has the same size along dim (check_scatter_sizes)
    std::vector<Tensor> chunks = scatter(t, devices, dim);
    out.per_replica.resize(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) out.per_replica[i].push_back(std::move(chunks[i]));
  }
  return out;
}

/// Throws unless every Tensor among `args` (and among the elements of a std::vector<Tensor>
/// argument) has the size of the first along dim: they are split into the same chunks.
template <class... Args>
void check_scatter_sizes(int64_t dim, const Args&... args) {
  const Tensor* first = nullptr;
  std::string first_name;
  auto check = [&](const Tensor& t, const std::string& name) {
    TT_CHECK(t.defined() && t.dim() > 0, "DataParallel: ", name, " is a tensor with no dimension to split along dim ",
             dim, " (", t.defined() ? shape_str(t.sizes()) : std::string("undefined"), ")");
    const std::string what = tinytorch::detail::str_cat("DataParallel: ", name, " of shape ", shape_str(t.sizes()));
    const int64_t d = wrap_dim(dim, t.dim(), what.c_str());
    if (!first) {
      first = &t;
      first_name = name;
      return;
    }
    const int64_t d0 = wrap_dim(dim, first->dim(), "DataParallel");
    TT_CHECK(t.size(d) == first->size(d0), "DataParallel: every tensor argument is split along dim ", dim,
             " and must have the same size there, but ", first_name, " has ", first->size(d0), " (shape ",
             shape_str(first->sizes()), ") and ", name, " has ", t.size(d), " (shape ", shape_str(t.sizes()),
             "); PyTorch would silently drop the extra chunks");
  };
  int index = -1;
  auto one = [&](const auto& a) {
    ++index;
    using A = std::decay_t<decltype(a)>;
    const std::string name = tinytorch::detail::str_cat("argument ", index);
    if constexpr (std::is_same_v<A, Tensor>) {
      check(a, name);
    } else if constexpr (std::is_same_v<A, std::vector<Tensor>>) {
      for (size_t e = 0; e < a.size(); ++e) check(a[e], tinytorch::detail::str_cat(name, " element ", e));
    }
  };
  (one(args), ...);
  (void)one;  // no arguments: the fold above is empty
}

}  TT_NAMESPACE_END  // namespace tinytorch::parallel::detail

TT_NAMESPACE_BEGIN namespace nn {

class DataParallel : public Module {
 public:
  /// module: the model (must live on device_ids[0] and implement clone()); device_ids: one per
  /// replica (repeats allowed: {cpu, cpu, cpu} is three CPU replicas); output_device: where the
  /// output is gathered (default device_ids[0]); dim: the batch dimension that is split.
  /// Throws tinytorch::Error for a null module. The module is registered as the child "module",
  /// so parameter names read "module.0.weight" as in PyTorch's DataParallel.
  DataParallel(std::shared_ptr<Module> module, std::vector<Device> device_ids,
               std::optional<Device> output_device = std::nullopt, int64_t dim = 0)
      : module_(std::move(module)), device_ids_(std::move(device_ids)), dim_(dim) {
    TT_CHECK(module_ != nullptr, "DataParallel: module is null");
    register_module("module", module_);
    output_device_ = output_device ? *output_device : device_ids_.empty() ? Device::cpu() : device_ids_[0];
    generators_.resize(device_ids_.size());
    seed_generators();
  }

  /// x: (B, ...) split along `dim`; returns the module's output for the whole batch, on
  /// output_device. Throws tinytorch::Error when the module is not on device_ids[0], does not
  /// implement clone(), or a replica throws ("in replica i on device d: ..."). Calls from several
  /// threads are run one after the other (the replicas' generators are shared state).
  Tensor forward(const Tensor& x) override {
    if (device_ids_.empty()) return module_->forward(x);
    std::lock_guard<std::mutex> lock(mutex_);
    parallel::detail::check_module_device(*module_, device_ids_[0], "DataParallel");
    std::vector<Tensor> inputs = parallel::scatter(x, device_ids_, dim_);
    if (device_ids_.size() == 1) return module_->forward(inputs[0]);
    const std::vector<Device> used(device_ids_.begin(), device_ids_.begin() + inputs.size());
    std::vector<std::shared_ptr<Module>> replicas = parallel::replicate(*module_, used);
    if (detail::process_generator().seed_version() != seed_version_) seed_generators();  // manual_seed was called
    std::vector<Generator*> gens;
    for (size_t i = 0; i < used.size(); ++i) gens.push_back(&generators_[i]);
    std::vector<Tensor> outputs = parallel::parallel_apply(replicas, inputs, used, gens);
    return parallel::gather(outputs, output_device_, dim_);
  }

  /// Several arguments: M::forward(args...) on every replica, M being the wrapped module's class
  /// (see the file comment): each Tensor argument split along dim (each element of a
  /// std::vector<Tensor> too), every other argument passed to every replica as it is. Returns the gathered output on output_device. Throws tinytorch::Error
  /// when the wrapped module is not an M, when Tensor arguments differ in size along dim or have no
  /// dim to split, and as forward(x) does. M::forward(args...) must return a Tensor.
  ///   struct Masked : nn::Module { Tensor forward(const Tensor& x, const Tensor& mask, double s); ... };
  ///   Tensor y = dp.forward<Masked>(x, mask, 0.5);
  template <class M, class... Args>
  Tensor forward(const Args&... args) {
    static_assert(std::is_base_of_v<Module, M>, "DataParallel::forward<M>: M is the wrapped module's class");
    static_assert(std::is_same_v<decltype(std::declval<M&>().forward(args...)), Tensor>,
                  "DataParallel::forward<M>: M::forward(args...) must return a Tensor");
    M* original = dynamic_cast<M*>(module_.get());
    TT_CHECK(original != nullptr, "DataParallel::forward<M>: the wrapped module is a ", module_->name(),
             ", not the class M named in forward<M>(...)");
    if (device_ids_.empty()) return original->forward(args...);
    std::lock_guard<std::mutex> lock(mutex_);
    parallel::detail::check_module_device(*module_, device_ids_[0], "DataParallel");
    parallel::detail::check_scatter_sizes(dim_, args...);
    const auto scattered = std::make_tuple(parallel::detail::scatter_arg(args, device_ids_, dim_)...);
    // As many replicas as chunks: every tensor has the same count (same size along dim); without a
    // tensor argument, one per device (PyTorch hands a non-tensor to every device).
    // No argument at all: one replica (PyTorch pads empty inputs to ((),)).
    size_t k = sizeof...(Args) == 0 ? 1 : device_ids_.size();
    std::apply([&](const auto&... s) { ((k = std::min(k, s.count())), ...); }, scattered);
    auto call = [&scattered](M& m, size_t i) {
      return std::apply([&](const auto&... s) { return m.forward(s.get(i)...); }, scattered);
    };
    if (device_ids_.size() == 1) return call(*original, 0);
    const std::vector<Device> used(device_ids_.begin(), device_ids_.begin() + static_cast<std::ptrdiff_t>(k));
    std::vector<std::shared_ptr<Module>> replicas = parallel::replicate(*module_, used);
    std::vector<M*> typed;
    for (const auto& r : replicas) {
      typed.push_back(dynamic_cast<M*>(r.get()));
      TT_CHECK(typed.back() != nullptr, "DataParallel::forward<M>: clone() of the wrapped ", module_->name(),
               " returned a ", r->name(), ", not an M");
    }
    if (detail::process_generator().seed_version() != seed_version_) seed_generators();  // manual_seed was called
    std::vector<Generator*> gens;
    for (size_t i = 0; i < used.size(); ++i) gens.push_back(&generators_[i]);
    std::vector<Tensor> outputs = parallel::parallel_apply(used, gens, [&](size_t i) { return call(*typed[i], i); });
    return parallel::gather(outputs, output_device_, dim_);
  }

  /// The wrapped module (PyTorch's `.module`).
  const std::shared_ptr<Module>& module() const { return module_; }
  const std::vector<Device>& device_ids() const { return device_ids_; }
  Device output_device() const { return output_device_; }
  int64_t dim() const { return dim_; }

  /// A DataParallel over module()->clone(), same devices (so DataParallel can be nested).
  std::shared_ptr<Module> clone() const override {
    auto m = std::make_shared<DataParallel>(module_->clone(), device_ids_, output_device_, dim_);
    m->train(is_training());
    return m;
  }
  std::string name() const override { return "DataParallel"; }

 private:
  /// Replica i's generator: seeded with (the default generator's seed + i), so replicas draw
  /// different streams, runs repeat, and nothing is drawn from the default generator. Done at
  /// construction and again after every manual_seed (PyTorch's manual_seed seeds every device's
  /// generator).
  void seed_generators() {
    const Generator& g = detail::process_generator();
    for (size_t i = 0; i < generators_.size(); ++i) generators_[i].manual_seed(g.initial_seed() + i);
    seed_version_ = g.seed_version();
  }

  std::shared_ptr<Module> module_;
  std::vector<Device> device_ids_;
  Device output_device_;
  int64_t dim_;
  std::vector<Generator> generators_;  // one per device slot
  uint64_t seed_version_ = 0;
  std::mutex mutex_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::nn
