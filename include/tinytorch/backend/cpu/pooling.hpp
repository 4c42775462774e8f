// tinytorch/backend/cpu/pooling.hpp — 2-D max pooling with indices, forward and backward, on raw
// row-major buffers.
//
// Shapes: x (P, H, W) where P = N C planes (every plane is pooled on its own), y and indices
// (P, H_out, W_out). For output pixel (oh, ow) the window is
//   ih = oh sH - pH + i dH  (i < kH),   iw = ow sW - pW + j dW  (j < kW),
// restricted to the pixels inside the image (padding never wins: it counts as -inf), and
//   y[p, oh, ow]       = max over the window of x[p, ih, iw]
//   indices[p, oh, ow] = ih W + iw of that max, a flat index into the plane (as PyTorch returns)
// Ties keep the first index in row-major window order; a NaN wins over any number (the last NaN in
// the window, exactly as PyTorch's CPU kernel scans). A window with only -inf keeps its first pixel.
// Backward routes each output gradient to its argmax: dx[p, indices[p, o]] += dy[p, o]
// (overlapping windows, stride < kernel, may send several gradients to one pixel: they add up).
// max_pool2d_naive recomputes the forward without the clipped loop bounds, for the tests.
// Chapter: chapters/01-training-loop.md ("A convolutional network").
// Reference: PyTorch aten/src/ATen/native/cpu/MaxPoolKernel.cpp (cpu_max_pool), same scan order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

/// Every size of one pooling (validated by the caller, ops/conv.hpp).
struct Pool2dGeometry {
  int64_t planes, H, W;           ///< input (P, H, W)
  int64_t kH, kW, sH, sW, pH, pW, dH, dW;
  int64_t H_out, W_out;
};

template <class T>
void max_pool2d_kernel(const T* x, T* y, int64_t* indices, const Pool2dGeometry& g) {
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* xp = x + p * g.H * g.W;
    T* yp = y + p * g.H_out * g.W_out;
    int64_t* ip = indices + p * g.H_out * g.W_out;
    for (int64_t oh = 0; oh < g.H_out; ++oh) {
      int64_t ih0 = oh * g.sH - g.pH;
      const int64_t ih1 = std::min(ih0 + (g.kH - 1) * g.dH + 1, g.H);
      while (ih0 < 0) ih0 += g.dH;  // first window row inside the image
      for (int64_t ow = 0; ow < g.W_out; ++ow) {
        int64_t iw0 = ow * g.sW - g.pW;
        const int64_t iw1 = std::min(iw0 + (g.kW - 1) * g.dW + 1, g.W);
        while (iw0 < 0) iw0 += g.dW;
        T best = -std::numeric_limits<T>::infinity();
        int64_t arg = ih0 * g.W + iw0;
        for (int64_t ih = ih0; ih < ih1; ih += g.dH)
          for (int64_t iw = iw0; iw < iw1; iw += g.dW) {
            const T v = xp[ih * g.W + iw];
            if (v > best || std::isnan(v)) {
              best = v;
              arg = ih * g.W + iw;
            }
          }
        yp[oh * g.W_out + ow] = best;
        ip[oh * g.W_out + ow] = arg;
      }
    }
  }
}

/// dx (P, H, W) = the output gradients dy (P, H_out, W_out) sent back to their argmax pixels.
template <class T>
void max_pool2d_backward_kernel(const T* dy, const int64_t* indices, T* dx, const Pool2dGeometry& g) {
  const int64_t in = g.H * g.W, out = g.H_out * g.W_out;
  for (int64_t k = 0; k < g.planes * in; ++k) dx[k] = T(0);
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t o = 0; o < out; ++o) dx[p * in + indices[p * out + o]] += dy[p * out + o];
}

/// The definition, window offset by window offset (skipping pixels outside the image).
template <class T>
void max_pool2d_naive(const T* x, T* y, int64_t* indices, const Pool2dGeometry& g) {
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.H_out; ++oh)
      for (int64_t ow = 0; ow < g.W_out; ++ow) {
        T best = -std::numeric_limits<T>::infinity();
        int64_t arg = -1;
        for (int64_t i = 0; i < g.kH; ++i)
          for (int64_t j = 0; j < g.kW; ++j) {
            const int64_t ih = oh * g.sH - g.pH + i * g.dH, iw = ow * g.sW - g.pW + j * g.dW;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            const T v = x[(p * g.H + ih) * g.W + iw];
            if (arg < 0 || v > best || std::isnan(v)) {
              best = v;
              arg = ih * g.W + iw;
            }
          }
        y[(p * g.H_out + oh) * g.W_out + ow] = best;
        indices[(p * g.H_out + oh) * g.W_out + ow] = arg;
      }
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu
