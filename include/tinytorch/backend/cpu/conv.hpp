// tinytorch/backend/cpu/conv.hpp — 2-D convolution (cross-correlation, as in every framework),
// forward and backward, on raw row-major buffers: im2col + GEMM, and the direct-loop twin.
//
// Shapes (NCHW, contiguous):  x (N, C_in, H, W)   w (C_out, C_in/groups, kH, kW)   b (C_out)
//                             y (N, C_out, H_out, W_out)
//   H_out = floor((H + 2 pH - dH (kH - 1) - 1) / sH) + 1        (W_out likewise)
//   y[n, co, oh, ow] = b[co] + sum_{ci, i, j} w[co, ci, i, j] * x[n, g*C_in/groups + ci, ih, iw]
//     with ih = oh sH - pH + i dH,  iw = ow sW - pW + j dW  (zero outside the image),
//     g = co / (C_out/groups) the group of output channel co.
//
// im2col turns convolution into one matrix product per image. For image n it builds
//   col (C_in kH kW, L),  L = H_out W_out,   col[(c kH + i) kW + j, oh W_out + ow] = x[n, c, ih, iw]
// (each column is one receptive field, flattened), so that for every group g
//   y_n[g] (C_out/groups, L) = W_g (C_out/groups, K) @ col_g (K, L),   K = C_in/groups kH kW,
// where W_g is w's rows of group g read as a (C_out/groups, K) matrix (no copy: w is already laid
// out that way) and col_g is col's rows of group g's input channels. The output rows land in
// NCHW order directly. Backward is the same picture read the other way:
//   dW_g += dY_g @ col_g^T          (summed over the images)
//   dcol_g = W_g^T @ dY_g,  dx_n = col2im(dcol)   (col2im adds each column entry back onto the
//                                                   pixel it was copied from: im2col's adjoint)
//   db[co] = sum over n, oh, ow of dY[n, co, oh, ow]
// Products go through backend/cpu/gemm.hpp (Eigen). The col buffer is one image's worth and is
// rebuilt in backward rather than kept from forward (PyTorch's slow_conv2d does the same).
//
// conv2d_naive / conv2d_backward_naive compute the formulas above with plain loops, accumulating
// in double; tests/test_conv.cpp checks the fast kernels against them on odd shapes.
// Chapter: chapters/01-training-loop.md ("A convolutional network"). Reference: PyTorch
// aten/src/ATen/native/ConvolutionMM2d.cpp (slow_conv2d: unfold + gemm per image), Chellapilla
// et al., "High Performance Convolutional Neural Networks for Document Processing" (2006).
#pragma once

#include <cstdint>
#include <vector>

#include "tinytorch/backend/cpu/gemm.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace backend::cpu {

/// Every size of one convolution (validated by the caller, ops/conv.hpp).
struct Conv2dGeometry {
  int64_t N, C_in, H, W;             ///< input
  int64_t C_out, kH, kW;             ///< weight (C_out, C_in/groups, kH, kW)
  int64_t sH, sW, pH, pW, dH, dW;    ///< stride, padding, dilation
  int64_t groups;
  int64_t H_out, W_out;              ///< output
  int64_t cin_g() const { return C_in / groups; }    ///< input channels per group
  int64_t cout_g() const { return C_out / groups; }  ///< output channels per group
  int64_t K() const { return cin_g() * kH * kW; }    ///< rows of col_g, columns of W_g
  int64_t L() const { return H_out * W_out; }        ///< output pixels per channel
};

/// col (C kH kW, H_out W_out) from one image x (C, H, W); zero where the window is off the image.
template <class T>
void im2col(const T* x, T* col, int64_t C, const Conv2dGeometry& g) {
  const int64_t L = g.L();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) {
        T* row = col + ((c * g.kH + i) * g.kW + j) * L;
        const T* xc = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.H_out; ++oh) {
          T* out = row + oh * g.W_out;
          const int64_t ih = oh * g.sH - g.pH + i * g.dH;
          if (ih < 0 || ih >= g.H) {
            for (int64_t ow = 0; ow < g.W_out; ++ow) out[ow] = T(0);
            continue;
          }
          const T* xr = xc + ih * g.W;
          for (int64_t ow = 0; ow < g.W_out; ++ow) {
            const int64_t iw = ow * g.sW - g.pW + j * g.dW;
            out[ow] = (iw >= 0 && iw < g.W) ? xr[iw] : T(0);
          }
        }
      }
}

/// im2col's adjoint: adds col (C kH kW, H_out W_out) back onto one image x (C, H, W), which the
/// caller has zeroed. A pixel covered by several windows receives the sum of their entries.
template <class T>
void col2im(const T* col, T* x, int64_t C, const Conv2dGeometry& g) {
  const int64_t L = g.L();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) {
        const T* row = col + ((c * g.kH + i) * g.kW + j) * L;
        T* xc = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.H_out; ++oh) {
          const int64_t ih = oh * g.sH - g.pH + i * g.dH;
          if (ih < 0 || ih >= g.H) continue;
          const T* in = row + oh * g.W_out;
          T* xr = xc + ih * g.W;
          for (int64_t ow = 0; ow < g.W_out; ++ow) {
            const int64_t iw = ow * g.sW - g.pW + j * g.dW;
            if (iw >= 0 && iw < g.W) xr[iw] += in[ow];
          }
        }
      }
}

/// y = conv2d(x, w) + b  (b may be nullptr). x, w, b, y as in the header.
template <class T>
void conv2d_kernel(const T* x, const T* w, const T* b, T* y, const Conv2dGeometry& g) {
  const int64_t L = g.L(), K = g.K(), Cg = g.cout_g();
  std::vector<T> col(static_cast<size_t>(g.C_in * g.kH * g.kW * L));
  for (int64_t n = 0; n < g.N; ++n) {
    const T* xn = x + n * g.C_in * g.H * g.W;
    T* yn = y + n * g.C_out * L;  // (C_out, L)
    im2col(xn, col.data(), g.C_in, g);
    for (int64_t co = 0; co < g.C_out; ++co)  // start from the bias, then add the products
      for (int64_t l = 0; l < L; ++l) yn[co * L + l] = b ? b[co] : T(0);
    for (int64_t grp = 0; grp < g.groups; ++grp)
      // y_n[g] (Cg, L) += W_g (Cg, K) @ col_g (K, L)
      gemm<T>(Cg, L, K, T(1), w + grp * Cg * K, K, false, col.data() + grp * K * L, L, false, T(1),
              yn + grp * Cg * L, L);
  }
}

/// Gradients of conv2d for dy (N, C_out, H_out, W_out). Each output pointer may be nullptr (that
/// gradient is not needed); dx, dw, db are overwritten. w is needed for dx, x for dw.
template <class T>
void conv2d_backward_kernel(const T* x, const T* w, const T* dy, T* dx, T* dw, T* db, const Conv2dGeometry& g) {
  const int64_t L = g.L(), K = g.K(), Cg = g.cout_g();
  const size_t col_size = static_cast<size_t>(g.C_in * g.kH * g.kW * L);
  std::vector<T> col(dw ? col_size : 0), dcol(dx ? col_size : 0);
  if (dw)
    for (int64_t k = 0; k < g.C_out * K; ++k) dw[k] = T(0);
  if (dx)
    for (int64_t k = 0; k < g.N * g.C_in * g.H * g.W; ++k) dx[k] = T(0);
  if (db)
    for (int64_t co = 0; co < g.C_out; ++co) db[co] = T(0);
  for (int64_t n = 0; n < g.N; ++n) {
    const T* dyn = dy + n * g.C_out * L;  // (C_out, L)
    if (dw) {
      im2col(x + n * g.C_in * g.H * g.W, col.data(), g.C_in, g);
      for (int64_t grp = 0; grp < g.groups; ++grp)
        // dW_g (Cg, K) += dY_g (Cg, L) @ col_g^T (L, K)
        gemm<T>(Cg, K, L, T(1), dyn + grp * Cg * L, L, false, col.data() + grp * K * L, L, true, T(1),
                dw + grp * Cg * K, K);
    }
    if (dx) {
      for (int64_t grp = 0; grp < g.groups; ++grp)
        // dcol_g (K, L) = W_g^T (K, Cg) @ dY_g (Cg, L)
        gemm<T>(K, L, Cg, T(1), w + grp * Cg * K, K, true, dyn + grp * Cg * L, L, false, T(0),
                dcol.data() + grp * K * L, L);
      col2im(dcol.data(), dx + n * g.C_in * g.H * g.W, g.C_in, g);
    }
    if (db)
      for (int64_t co = 0; co < g.C_out; ++co) {
        double s = 0;
        for (int64_t l = 0; l < L; ++l) s += static_cast<double>(dyn[co * L + l]);
        db[co] += static_cast<T>(s);
      }
  }
}

// ---- the direct-loop twins (reference for the tests) ------------------------------------------

/// The header's formula, one output element at a time (accumulates in double).
template <class T>
void conv2d_naive(const T* x, const T* w, const T* b, T* y, const Conv2dGeometry& g) {
  const int64_t Ci = g.cin_g(), Cg = g.cout_g();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t co = 0; co < g.C_out; ++co) {
      const int64_t c0 = (co / Cg) * Ci;  // first input channel of this output channel's group
      for (int64_t oh = 0; oh < g.H_out; ++oh)
        for (int64_t ow = 0; ow < g.W_out; ++ow) {
          double acc = b ? static_cast<double>(b[co]) : 0.0;
          for (int64_t ci = 0; ci < Ci; ++ci)
            for (int64_t i = 0; i < g.kH; ++i)
              for (int64_t j = 0; j < g.kW; ++j) {
                const int64_t ih = oh * g.sH - g.pH + i * g.dH, iw = ow * g.sW - g.pW + j * g.dW;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                acc += static_cast<double>(x[((n * g.C_in + c0 + ci) * g.H + ih) * g.W + iw]) *
                       static_cast<double>(w[((co * Ci + ci) * g.kH + i) * g.kW + j]);
              }
          y[((n * g.C_out + co) * g.H_out + oh) * g.W_out + ow] = static_cast<T>(acc);
        }
    }
}

/// d/dx, d/dw, d/db of sum(y * dy) by the chain rule on the same loops (accumulates in double):
///   dx[n, c0+ci, ih, iw] += dy[n, co, oh, ow] w[co, ci, i, j]
///   dw[co, ci, i, j]     += dy[n, co, oh, ow] x[n, c0+ci, ih, iw]
///   db[co]               += dy[n, co, oh, ow]
template <class T>
void conv2d_backward_naive(const T* x, const T* w, const T* dy, T* dx, T* dw, T* db, const Conv2dGeometry& g) {
  const int64_t Ci = g.cin_g(), Cg = g.cout_g();
  std::vector<double> gx(static_cast<size_t>(g.N * g.C_in * g.H * g.W), 0.0);
  std::vector<double> gw(static_cast<size_t>(g.C_out * Ci * g.kH * g.kW), 0.0), gb(static_cast<size_t>(g.C_out), 0.0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t co = 0; co < g.C_out; ++co) {
      const int64_t c0 = (co / Cg) * Ci;
      for (int64_t oh = 0; oh < g.H_out; ++oh)
        for (int64_t ow = 0; ow < g.W_out; ++ow) {
          const double d = static_cast<double>(dy[((n * g.C_out + co) * g.H_out + oh) * g.W_out + ow]);
          gb[co] += d;
          for (int64_t ci = 0; ci < Ci; ++ci)
            for (int64_t i = 0; i < g.kH; ++i)
              for (int64_t j = 0; j < g.kW; ++j) {
                const int64_t ih = oh * g.sH - g.pH + i * g.dH, iw = ow * g.sW - g.pW + j * g.dW;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const int64_t xi = ((n * g.C_in + c0 + ci) * g.H + ih) * g.W + iw;
                const int64_t wi = ((co * Ci + ci) * g.kH + i) * g.kW + j;
                gx[xi] += d * static_cast<double>(w[wi]);
                gw[wi] += d * static_cast<double>(x[xi]);
              }
        }
    }
  if (dx)
    for (size_t k = 0; k < gx.size(); ++k) dx[k] = static_cast<T>(gx[k]);
  if (dw)
    for (size_t k = 0; k < gw.size(); ++k) dw[k] = static_cast<T>(gw[k]);
  if (db)
    for (size_t k = 0; k < gb.size(); ++k) db[k] = static_cast<T>(gb[k]);
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cpu
