// tinytorch/ops/item.ipp — the bodies behind Tensor::item / at / tolist (ops/item.hpp):
// read_element and host_contiguous.
//
// Not a header to include: ops/item.hpp includes it in a header-only build, <tinytorch/src.hpp>
// compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL, core/config.hpp).
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <cstring>

#include "tinytorch/ops/item.hpp"
#include "tinytorch/ops/dispatch.hpp"  // check_device, copy_bytes, to_host
#include "tinytorch/ops/shape.hpp"     // contiguous
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN

namespace detail {
TT_DECL ElementBytes read_element(const Tensor& t, int64_t offset, const char* op) {
  ops::check_device(t, op);
  ElementBytes b{};
  dispatch_all(t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = t.data_ptr<S>() + offset;
    if (t.device().is_cpu()) std::memcpy(b.bytes, p, sizeof(S));
    else backend::dispatch::copy_bytes(Device::cpu(), b.bytes, t.device(), p, sizeof(S));  // a GPU tensor
  });
  return b;
}
TT_DECL Tensor host_contiguous(const Tensor& t) { return ops::contiguous(ops::to_host(t)); }
}  // namespace detail

TT_NAMESPACE_END  // namespace tinytorch
