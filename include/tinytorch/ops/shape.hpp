// tinytorch/ops/shape.hpp — views (no copy) and copies that change layout.
//
// A view keeps the storage and changes (shape, strides, offset):
//   transpose(d0, d1): swap shape[d0]<->shape[d1] and strides[d0]<->strides[d1]
//   narrow(d, s, l):   offset += s*stride[d], shape[d] = l
//   select(d, i):      offset += i*stride[d], drop dim d
//   expand(shape):     size-1 dims get stride 0
//   view(shape):       new strides computed by compute_view_strides (PyTorch's computeStride);
//                      impossible when a merged group of dims is not contiguous -> error.
// contiguous()/clone()/to() copy into a fresh row-major buffer.
// No autograd here: functional.hpp wraps these with their backward.
// Reference: ATen's TensorShape.cpp and computeStride in TensorUtils.cpp.
// Chapter: chapters/02-autograd.md.
#pragma once

#include <algorithm>
#include <optional>

#include "tinytorch/backend/cpu/elementwise.hpp"
#include "tinytorch/ops/dispatch.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace ops {

/// Replaces a single -1 in `shape` so the product equals numel; checks the product.
inline Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TT_CHECK(infer < 0, op, ": only one dimension can be inferred in shape ", shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      TT_CHECK(shape[i] >= 0, op, ": invalid shape dimension ", shape[i], " in ", shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    TT_CHECK(known != 0 && numel % known == 0, op, ": shape '", shape_str(shape),
             "' is invalid for input of size ", numel);
    out[infer] = numel / known;
  }
  TT_CHECK(numel_of(out) == numel, op, ": shape '", shape_str(shape), "' is invalid for input of size ",
           numel);
  return out;
}

/// Strides that let (oldshape, oldstride) be read as newshape without copying, or nullopt.
/// A port of ATen's computeStride: dims are grouped into contiguous "chunks"; each chunk must map
/// onto whole groups of the new dims.
inline std::optional<Strides> compute_view_strides(const Shape& oldshape, const Strides& oldstride,
                                                   const Shape& newshape) {
  if (oldshape.empty()) return Strides(newshape.size(), 1);
  int64_t numel = numel_of(oldshape);
  if (numel == 0) return oldshape == newshape ? oldstride : contiguous_strides(newshape);
  Strides newstride(newshape.size());
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                          oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

inline Tensor view(const Tensor& t, const Shape& shape) {
  Shape s = infer_size(shape, t.numel(), "view");
  auto st = compute_view_strides(t.sizes(), t.strides(), s);
  TT_CHECK(st.has_value(), "view: size ", shape_str(shape), " is not compatible with input tensor's size ",
           shape_str(t.sizes()), " and stride ", shape_str(t.strides()),
           " (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(t, s, *st, t.storage_offset());
}

/// Copies `src` (any strides, any dtype) into the dense tensor `dst` of the same shape, on their
/// (common) device: the copy kernel of backend/cpu or backend/cuda (ops/dispatch.hpp).
inline void copy_into_dense(const Tensor& src, Tensor& dst) {
  TT_CHECK(src.device() == dst.device(), "copy: source on ", src.device().str(), " and destination on ",
           dst.device().str(), " (copy_into_dense copies within one device)");
  const Device d = dst.device();
  dispatch_all(src.dtype(), [&](auto s) {  // all 25 pairs: a float16 <-> bfloat16 cast goes through float
    using S = typename decltype(s)::type;
    dispatch_all(dst.dtype(), [&](auto t) {
      using D = typename decltype(t)::type;
      backend::dispatch::copy_kernel(d, src.data_ptr<S>(), src.strides(), dst.data_ptr<D>(), src.sizes());
    });
  });
}

/// Copies `src` (same shape, any strides, any dtype, the same device) into `dst`, which may be any
/// view (a slice of cat's output, a transposed tensor): the dims are ordered by dst's strides, the
/// dense trailing block of dst is written by one copy kernel per index of the remaining outer dims.
/// Works on every device (the kernels write dense memory only; this is how a strided destination is
/// reached). dst must not overlap src.
inline void copy_into_strided(const Tensor& src, Tensor& dst) {
  TT_CHECK(src.sizes() == dst.sizes(), "copy: shapes ", shape_str(src.sizes()), " and ", shape_str(dst.sizes()),
           " differ");
  if (dst.numel() == 0) return;
  if (dst.is_contiguous()) {
    Tensor dense = make_view(dst, dst.sizes(), contiguous_strides(dst.sizes()), dst.storage_offset());
    copy_into_dense(src, dense);
    return;
  }
  const int64_t nd = dst.dim();
  std::vector<int64_t> order(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return dst.strides()[a] > dst.strides()[b];
  });
  Shape shape(nd);
  Strides ds(nd), ss(nd);
  for (int64_t i = 0; i < nd; ++i) {
    shape[i] = dst.sizes()[order[i]];
    ds[i] = dst.strides()[order[i]];
    ss[i] = src.strides()[order[i]];
  }
  int64_t k = nd, expected = 1;  // dims [k, nd) form a dense block of dst
  while (k > 0 && (shape[k - 1] == 1 || ds[k - 1] == expected)) {
    expected *= shape[k - 1];
    --k;
  }
  const Shape inner_shape(shape.begin() + k, shape.end());
  const Strides inner_src(ss.begin() + k, ss.end());
  const Strides inner_dense = contiguous_strides(inner_shape);
  std::vector<int64_t> idx(static_cast<size_t>(k), 0);
  int64_t outer = 1;
  for (int64_t i = 0; i < k; ++i) outer *= shape[i];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t doff = dst.storage_offset(), soff = src.storage_offset();
    for (int64_t i = 0; i < k; ++i) {
      doff += idx[i] * ds[i];
      soff += idx[i] * ss[i];
    }
    const Tensor s_part = make_view(src, inner_shape, inner_src, soff);
    Tensor d_part = make_view(dst, inner_shape, inner_dense, doff);
    copy_into_dense(s_part, d_part);
    for (int64_t i = k - 1; i >= 0; --i) {  // next outer multi-index
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
}

inline Tensor contiguous(const Tensor& t) {
  check_device(t, "contiguous");
  if (t.is_contiguous()) return t;
  Tensor out = make_tensor(t.sizes(), t.dtype(), t.device());
  copy_into_dense(t, out);
  return out;
}

inline Tensor clone(const Tensor& t) {
  check_device(t, "clone");
  Tensor out = make_tensor(t.sizes(), t.dtype(), t.device());
  copy_into_dense(t, out);
  return out;
}

inline Tensor to_dtype(const Tensor& t, DType dtype) {
  check_device(t, "to");
  if (t.dtype() == dtype) return t;
  Tensor out = make_tensor(t.sizes(), dtype, t.device());
  copy_into_dense(t, out);
  return out;
}

/// to_dtype(t, kFloat32), and an undefined t (an absent bias or bound) stays undefined: how a
/// float16/bfloat16 op hands its operands to the float32 kernel (ops/dispatch.hpp).
inline Tensor to_float32(const Tensor& t) { return t.defined() ? to_dtype(t, kFloat32) : t; }

/// The same values on `device` (Tensor::to(Device), not differentiable here): `t` itself when it is
/// already there, as PyTorch's to() returns self; else a dense copy: a strided source is made
/// contiguous on its own device first (copy kernel), then one runtime memcpy (host to device,
/// device to host, or device to device, another GPU included). Throws "invalid device ordinal"
/// for a GPU the machine does not have. Copies between devices need the CUDA backend: in a CPU
/// build they throw, naming both devices.
inline Tensor to_device(const Tensor& t, Device device) {
  TT_CHECK(t.defined(), "to: got an undefined tensor");
  if (t.device() == device) return t;
#if !TINYTORCH_WITH_CUDA
  TT_CHECK(false, "to: copying a tensor from ", t.device().str(), " to ", device.str(),
           " needs the CUDA backend, which this build does not have (compile with nvcc, or with "
           "-DTINYTORCH_CUDA_SIM=1 for the kernel simulator)");
#endif
  const Tensor src = contiguous(t);
  Tensor out = make_tensor(t.sizes(), t.dtype(), device);
  backend::dispatch::copy_bytes(device, out.raw_data(), src.device(), src.raw_data(),
                                static_cast<size_t>(t.numel()) * element_size(t.dtype()));
  return out;
}

inline Tensor reshape(const Tensor& t, const Shape& shape) {
  Shape s = infer_size(shape, t.numel(), "reshape");
  if (auto st = compute_view_strides(t.sizes(), t.strides(), s))
    return make_view(t, s, *st, t.storage_offset());
  return view(contiguous(t), s);
}

inline Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  d0 = wrap_dim(d0, t.dim(), "transpose");
  d1 = wrap_dim(d1, t.dim(), "transpose");
  Shape s = t.sizes();
  Strides st = t.strides();
  if (t.dim() == 0) return make_view(t, s, st, t.storage_offset());
  std::swap(s[d0], s[d1]);
  std::swap(st[d0], st[d1]);
  return make_view(t, s, st, t.storage_offset());
}

inline Tensor permute(const Tensor& t, const std::vector<int64_t>& dims) {
  TT_CHECK(static_cast<int64_t>(dims.size()) == t.dim(), "permute: number of dims ", dims.size(),
           " does not match the tensor's ", t.dim(), " dims (shape ", shape_str(t.sizes()), ")");
  Shape s(dims.size());
  Strides st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], t.dim(), "permute");
    TT_CHECK(!seen[d], "permute: repeated dim ", dims[i], " in ", shape_str(dims));
    seen[d] = true;
    s[i] = t.sizes()[d];
    st[i] = t.strides()[d];
  }
  return make_view(t, s, st, t.storage_offset());
}

inline Tensor unsqueeze(const Tensor& t, int64_t dim) {
  dim = wrap_dim(dim, t.dim() + 1, "unsqueeze");
  Shape s = t.sizes();
  Strides st = t.strides();
  int64_t new_stride = dim < t.dim() ? s[dim] * st[dim] : 1;
  s.insert(s.begin() + dim, 1);
  st.insert(st.begin() + dim, new_stride);
  return make_view(t, s, st, t.storage_offset());
}

inline Tensor squeeze(const Tensor& t, std::optional<int64_t> dim) {
  Shape s;
  Strides st;
  int64_t only = dim ? wrap_dim(*dim, t.dim(), "squeeze") : -1;
  for (int64_t i = 0; i < t.dim(); ++i) {
    bool drop = t.sizes()[i] == 1 && (!dim || i == only);
    if (!drop) {
      s.push_back(t.sizes()[i]);
      st.push_back(t.strides()[i]);
    }
  }
  return make_view(t, s, st, t.storage_offset());
}

inline Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  TT_CHECK(t.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, t.dim(), "narrow");
  int64_t size = t.sizes()[dim];
  if (start < 0) start += size;
  // length <= size - start rather than start + length <= size: the sum may overflow int64.
  TT_CHECK(start >= 0 && start <= size && length >= 0 && length <= size - start, "narrow: start (",
           start, ") + length (", length, ") exceeds dimension size (", size, "). (dim ", dim,
           " of shape ", shape_str(t.sizes()), ")");
  Shape s = t.sizes();
  s[dim] = length;
  return make_view(t, s, t.strides(), t.storage_offset() + start * t.strides()[dim]);
}

inline Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  TT_CHECK(t.dim() > 0, "select: cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, t.dim(), "select");
  int64_t size = t.sizes()[dim];
  TT_CHECK(index >= -size && index < size, "select: index ", index,
           " out of range for tensor of size ", shape_str(t.sizes()), " at dimension ", dim);
  if (index < 0) index += size;
  Shape s = t.sizes();
  Strides st = t.strides();
  int64_t off = t.storage_offset() + index * st[dim];
  s.erase(s.begin() + dim);
  st.erase(st.begin() + dim);
  return make_view(t, s, st, off);
}

inline Tensor expand(const Tensor& t, const Shape& shape) {
  TT_CHECK(shape.size() >= t.sizes().size(), "expand: the number of sizes provided (", shape.size(),
           ") must be greater or equal to the number of dimensions in the tensor (", t.dim(), ")");
  Shape out = shape;
  size_t lead = shape.size() - t.sizes().size();
  for (size_t i = 0; i < shape.size(); ++i) {
    TT_CHECK(shape[i] >= -1, "expand(", tensor_type_name(t.dtype()), "{", shape_str(t.sizes()), "}, size=",
             shape_str(shape), "): the desired size must be non-negative, but got ", shape[i], " at dim ", i);
    if (i < lead) {
      TT_CHECK(shape[i] >= 0, "expand: the expanded size of the tensor (-1) isn't allowed in a leading, "
               "non-existing dimension ", i, " (size=", shape_str(shape), ")");
      continue;
    }
    int64_t have = t.sizes()[i - lead];
    if (shape[i] == -1) out[i] = have;
    TT_CHECK(have == out[i] || have == 1, "expand: the expanded size of the tensor (", out[i],
             ") must match the existing size (", have, ") at non-singleton dimension ", i,
             ".  Target sizes: ", shape_str(shape), ".  Tensor sizes: ", shape_str(t.sizes()));
  }
  numel_of(out);  // throws when the expanded shape has more elements than int64 can count
  return make_view(t, out, broadcast_strides(t.sizes(), t.strides(), out), t.storage_offset());
}

}  TT_NAMESPACE_END  // namespace tinytorch::ops
