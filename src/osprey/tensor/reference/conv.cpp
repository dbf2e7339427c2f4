// Reference 2-D convolution, forward and both backward passes, NHWC or NCHW data with an HWIO
// kernel [kh, kw, in / groups, out]. One loop nest (for_each_tap) visits every (output, tap,
// input) triple of the forward sum; forward gathers along it and the two backward passes scatter
// along the very same triples, so they are the exact adjoints of forward by construction.

#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

using detail::Layout4;

// The geometry shared by the three passes, from the shapes of x, w and y (whichever side is the
// output, the caller has already allocated it with the right shape).
struct ConvGeometry {
  Layout4 x, y;
  int64_t kh, kw, cin_per_group, cout_per_group;

  ConvGeometry(const Shape& xs, const Shape& ws, const Shape& ys, const Conv2dParams& p)
      : x(xs, p.channels_last), y(ys, p.channels_last) {
    OSPREY_ASSERT(ws.ndim() == 4, "reference conv2d: kernel must be 4-D, got {}", ws.to_string());
    kh = ws[0];
    kw = ws[1];
    cin_per_group = ws[2];
    cout_per_group = y.c / p.groups;
    OSPREY_ASSERT(
        x.c == cin_per_group * p.groups && ws[3] == y.c && y.c % p.groups == 0 && x.n == y.n,
        "reference conv2d: x {}, w {}, y {} disagree for groups={}", xs.to_string(), ws.to_string(),
        ys.to_string(), p.groups);
  }

  // Position of w[i, j, ci, o] in the row-major HWIO kernel.
  int64_t w_index(int64_t i, int64_t j, int64_t ci, int64_t o) const {
    return ((i * kw + j) * cin_per_group + ci) * y.c + o;
  }
};

// Calls fn(y_index, x_index, w_index) for every term x * w of every output's sum; taps that fall
// into the padding are skipped (they read zeros).
template <class Fn>
void for_each_tap(const ConvGeometry& g, const Conv2dParams& p, Fn&& fn) {
  for (int64_t n = 0; n < g.y.n; ++n) {
    for (int64_t o = 0; o < g.y.c; ++o) {
      const int64_t group = o / g.cout_per_group;
      for (int64_t oh = 0; oh < g.y.h; ++oh) {
        for (int64_t ow = 0; ow < g.y.w; ++ow) {
          const int64_t yi = g.y(n, o, oh, ow);
          for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t ih = oh * p.stride_h - p.pad_top + i * p.dilation_h;
            if (ih < 0 || ih >= g.x.h) continue;
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t iw = ow * p.stride_w - p.pad_left + j * p.dilation_w;
              if (iw < 0 || iw >= g.x.w) continue;
              for (int64_t ci = 0; ci < g.cin_per_group; ++ci) {
                const int64_t c = group * g.cin_per_group + ci;
                fn(yi, g.x(n, c, ih, iw), g.w_index(i, j, ci, o));
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

// y[n, o, oh, ow] = bias[o] + sum_{i, j, ci} x[n, g*Cg + ci, oh*s - pad + i*d, ...] * w[i, j, ci,
// o]
void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                    const Conv2dParams& p) {
  const ConvGeometry g(x.shape(), w.shape(), y.shape(), p);
  const std::vector<double> xv = detail::to_doubles(x), wv = detail::to_doubles(w);
  std::vector<double> yv(static_cast<size_t>(y.numel()), 0.0);
  if (bias) {
    const std::vector<double> bv = detail::to_doubles(*bias);
    for (int64_t n = 0; n < g.y.n; ++n)
      for (int64_t o = 0; o < g.y.c; ++o)
        for (int64_t oh = 0; oh < g.y.h; ++oh)
          for (int64_t ow = 0; ow < g.y.w; ++ow) yv[g.y(n, o, oh, ow)] = bv[o];
  }
  for_each_tap(g, p, [&](int64_t yi, int64_t xi, int64_t wi) { yv[yi] += xv[xi] * wv[wi]; });
  detail::from_doubles(yv, y);
  if (p.activation != Activation::none) unary(unary_op_of(p.activation), y, y, {});
}

// dx = the adjoint of forward in x: every tap sends dy * w back to the input it read.
void conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p) {
  const ConvGeometry g(dx.shape(), w.shape(), dy.shape(), p);
  const std::vector<double> dyv = detail::to_doubles(dy), wv = detail::to_doubles(w);
  std::vector<double> dxv(static_cast<size_t>(dx.numel()), 0.0);
  for_each_tap(g, p, [&](int64_t yi, int64_t xi, int64_t wi) { dxv[xi] += dyv[yi] * wv[wi]; });
  detail::from_doubles(dxv, dx);
}

// dw = the adjoint of forward in w; dbias[o] = sum of dy over n, oh, ow.
void conv2d_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias,
                             const Conv2dParams& p) {
  const ConvGeometry g(x.shape(), dw.shape(), dy.shape(), p);
  const std::vector<double> dyv = detail::to_doubles(dy), xv = detail::to_doubles(x);
  std::vector<double> dwv(static_cast<size_t>(dw.numel()), 0.0);
  for_each_tap(g, p, [&](int64_t yi, int64_t xi, int64_t wi) { dwv[wi] += dyv[yi] * xv[xi]; });
  detail::from_doubles(dwv, dw);
  if (dbias) {
    std::vector<double> dbv(static_cast<size_t>(g.y.c), 0.0);
    for (int64_t n = 0; n < g.y.n; ++n)
      for (int64_t o = 0; o < g.y.c; ++o)
        for (int64_t oh = 0; oh < g.y.h; ++oh)
          for (int64_t ow = 0; ow < g.y.w; ++ow) dbv[o] += dyv[g.y(n, o, oh, ow)];
    detail::from_doubles(dbv, *dbias);
  }
}

}  // namespace osprey::reference
