// tinytorch/distributed/device_mesh.hpp — DeviceMesh: the ranks laid out as a grid, with one
// process group per line of the grid along each dimension (torch.distributed.device_mesh).
//
//   auto mesh = init_device_mesh("cpu", {2, 2}, {"dp", "tp"});   // on 4 ranks
//
//                   tp = 0   tp = 1
//       dp = 0   [  rank 0   rank 1 ]     rank = dp * 2 + tp   (row-major, as PyTorch's)
//       dp = 1   [  rank 2   rank 3 ]
//
//   mesh.get_group("tp")        rank 2's: the group {2, 3} (the ranks that share its dp
//                               coordinate: they hold the shards of one model replica)
//   mesh.get_group("dp")        rank 2's: the group {0, 2} (the ranks with the same shards:
//                               DistributedDataParallel averages their gradients)
//   mesh.get_local_rank("tp")   rank 2's coordinate along tp: 0
//
// In general, for a mesh of shape (s_0, ..., s_{n-1}) with s_0 * ... * s_{n-1} = world size,
// rank r has coordinate c_d = (r / stride_d) mod s_d, stride_d = s_{d+1} * ... * s_{n-1}, and its
// group along d holds the s_d ranks that differ from r in c_d only. Construction is a collective
// of the default group: every rank creates every group (world / s_d of them along d, in the same
// order: new_group(ranks)) and keeps those it belongs to. Dims whose ranks are neighbours (the
// last one) should be the ones that talk most (tensor parallelism: two all-reduces per block);
// on several machines that keeps them inside one machine.
// Errors (tinytorch::Error, the same on every rank because every rank checks the same numbers):
// a shape whose product is not the world size ("the mesh must tile the world"), a size < 1, a
// number of names that is not the number of dims, a name twice, an unknown device type, and
// asking for a dimension by a name the mesh does not have (or by name when it has none).
// Chapter: chapters/12-model-parallelism.md. Reference: torch.distributed.device_mesh
// (init_device_mesh(device_type, mesh_shape, mesh_dim_names), DeviceMesh.get_group,
// get_local_rank, get_coordinate, size); Megatron-LM parallel_state.py (the tp groups made of
// neighbouring ranks, the dp groups strided).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/core/config.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/process_group.hpp"

TT_NAMESPACE_BEGIN namespace distributed {

class DeviceMesh {
 public:
  /// Builds the groups (a collective: every rank calls it with the same arguments). See the
  /// file comment for the layout and the errors.
  DeviceMesh(std::string device_type, std::vector<int64_t> mesh_shape, std::vector<std::string> mesh_dim_names = {})
      : device_type_(std::move(device_type)), shape_(std::move(mesh_shape)), names_(std::move(mesh_dim_names)) {
    const char* op = "init_device_mesh";
    const int world = get_world_size();
    detail::check(device_type_ == "cpu" || device_type_ == "cuda", detail::rank_prefix(), op, ": device_type '",
                  device_type_, "' is not \"cpu\" or \"cuda\"");
    detail::check(!shape_.empty(), detail::rank_prefix(), op, ": the mesh shape is empty");
    int64_t product = 1;
    for (int64_t s : shape_) {
      detail::check(s >= 1, detail::rank_prefix(), op, ": mesh shape ", list(shape_), " has a size below 1");
      detail::check(s <= world && product * s <= world, detail::rank_prefix(), op, ": mesh shape ", list(shape_),
                    " holds more than the world's ", world, " ranks; the mesh must tile the world (the product of "
                    "the sizes must equal the world size)");
      product *= s;  // <= world: no overflow
    }
    detail::check(product == world, detail::rank_prefix(), op, ": mesh shape ", list(shape_), " holds ", product,
                  " ranks but the world has ", world, "; the mesh must tile the world (the product of the sizes "
                  "must equal the world size)");
    detail::check(names_.empty() || names_.size() == shape_.size(), detail::rank_prefix(), op, ": ", names_.size(),
                  " mesh_dim_names for a mesh of ", shape_.size(), " dims");
    for (size_t i = 0; i < names_.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        detail::check(names_[i] != names_[j], detail::rank_prefix(), op, ": mesh_dim_names has '", names_[i],
                      "' twice");

    const int64_t n = ndim();
    strides_.assign(shape_.size(), 1);
    for (int64_t d = n - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * shape_[d + 1];
    const int64_t me = get_rank();
    for (int64_t d = 0; d < n; ++d) coordinate_.push_back((me / strides_[d]) % shape_[d]);

    // Along each dim, every line of the grid, in the order of its first rank.
    groups_.resize(shape_.size());
    for (int64_t d = 0; d < n; ++d) {
      for (int64_t first = 0; first < world; ++first) {
        if ((first / strides_[d]) % shape_[d] != 0) continue;  // not the start of a line along d
        std::vector<int> members;
        for (int64_t k = 0; k < shape_[d]; ++k) members.push_back(static_cast<int>(first + k * strides_[d]));
        const std::string label = (names_.empty() ? "dim " + std::to_string(d) : names_[d]) + " group " +
                                  list(std::vector<int64_t>(members.begin(), members.end()));
        auto g = new_group(members, label);
        if (g) groups_[d] = std::move(g);
      }
    }
  }

  const std::string& device_type() const { return device_type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<std::string>& mesh_dim_names() const { return names_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  /// The number of ranks in the mesh (the world size).
  int64_t size() const { return strides_.empty() ? 0 : strides_[0] * shape_[0]; }
  /// The size of dimension `dim` (a name, or an index).
  int64_t size(const std::string& dim) const { return shape_[index(dim, "size")]; }
  int64_t size(int64_t dim) const { return shape_[index(dim, "size")]; }

  /// This rank's coordinate along `dim`: its rank in get_group(dim).
  int64_t get_local_rank(const std::string& dim) const { return coordinate_[index(dim, "get_local_rank")]; }
  int64_t get_local_rank(int64_t dim) const { return coordinate_[index(dim, "get_local_rank")]; }
  /// This rank's coordinates, one per dim.
  const std::vector<int64_t>& get_coordinate() const { return coordinate_; }

  /// This rank's group along `dim` (never null: every rank is on one line along each dim).
  std::shared_ptr<ProcessGroup> get_group(const std::string& dim) const { return groups_[index(dim, "get_group")]; }
  std::shared_ptr<ProcessGroup> get_group(int64_t dim) const { return groups_[index(dim, "get_group")]; }

  /// PyTorch's repr: "DeviceMesh('cpu', [[0, 1], [2, 3]], mesh_dim_names=('dp', 'tp'))".
  std::string str() const {
    std::string s = "DeviceMesh('" + device_type_ + "', " + nested(0, 0);
    if (!names_.empty()) {
      s += ", mesh_dim_names=(";
      for (size_t i = 0; i < names_.size(); ++i) s += (i ? ", '" : "'") + names_[i] + "'";
      s += names_.size() == 1 ? ",)" : ")";
    }
    return s + ")";
  }

 private:
  size_t index(const std::string& dim, const char* op) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == dim) return i;
    std::string known;
    for (const auto& n : names_) known += (known.empty() ? "'" : ", '") + n + "'";
    detail::throw_error(detail::rank_prefix() + "DeviceMesh." + op + ": no mesh dimension named '" + dim + "' (" +
                        (names_.empty() ? std::string("this mesh has no mesh_dim_names; use an index") :
                                          "the names are " + known) + ")");
  }
  size_t index(int64_t dim, const char* op) const {
    detail::check(dim >= 0 && dim < ndim(), detail::rank_prefix(), "DeviceMesh.", op, ": dim ", dim,
                  " is outside [0, ", ndim(), ")");
    return static_cast<size_t>(dim);
  }
  static std::string list(const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
    return "[" + s + "]";
  }
  /// The ranks from `first`, nested by dims from d on.
  std::string nested(size_t d, int64_t first) const {
    if (d == shape_.size()) return std::to_string(first);
    std::string s = "[";
    for (int64_t k = 0; k < shape_[d]; ++k) s += (k ? ", " : "") + nested(d + 1, first + k * strides_[d]);
    return s + "]";
  }

  std::string device_type_;
  std::vector<int64_t> shape_;
  std::vector<std::string> names_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> coordinate_;
  std::vector<std::shared_ptr<ProcessGroup>> groups_;
};

/// torch.distributed.device_mesh.init_device_mesh: the DeviceMesh of `mesh_shape` over all
/// ranks. A collective of the default group (see DeviceMesh). Throws tinytorch::Error as
/// DeviceMesh's constructor, or if the default group is not initialised.
inline DeviceMesh init_device_mesh(const std::string& device_type, std::vector<int64_t> mesh_shape,
                                   std::vector<std::string> mesh_dim_names = {}) {
  detail::require_initialized("init_device_mesh");
  return DeviceMesh(device_type, std::move(mesh_shape), std::move(mesh_dim_names));
}

}  TT_NAMESPACE_END  // namespace tinytorch::distributed
