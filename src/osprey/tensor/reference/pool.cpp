// Reference 2-D max and average pooling, NHWC or NCHW. Padded positions are never part of a
// window: they cannot win a max and do not count in an average (count_include_pad=False).
// Max pooling's workspace is an int64 tensor of y's shape holding, for each output, the
// row-major flat index into x of the element that won (the first maximum; -1 for a window that
// lies entirely in the padding).

#include <cmath>
#include <limits>

#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

using detail::Layout4;

// Calls fn(y_index, x_indices) for each output with the x indices of its unpadded window, in
// row-major window order (so "first" means top-left first).
template <class Fn>
void for_each_window(const Layout4& x, const Layout4& y, const Pool2dParams& p, Fn&& fn) {
  std::vector<int64_t> window;
  window.reserve(static_cast<size_t>(p.kernel_h * p.kernel_w));
  for (int64_t n = 0; n < y.n; ++n) {
    for (int64_t c = 0; c < y.c; ++c) {
      for (int64_t oh = 0; oh < y.h; ++oh) {
        for (int64_t ow = 0; ow < y.w; ++ow) {
          window.clear();
          for (int64_t i = 0; i < p.kernel_h; ++i) {
            const int64_t ih = oh * p.stride_h - p.pad_top + i;
            if (ih < 0 || ih >= x.h) continue;
            for (int64_t j = 0; j < p.kernel_w; ++j) {
              const int64_t iw = ow * p.stride_w - p.pad_left + j;
              if (iw < 0 || iw >= x.w) continue;
              window.push_back(x(n, c, ih, iw));
            }
          }
          fn(y(n, c, oh, ow), window);
        }
      }
    }
  }
}

// Flat x index of each output's maximum: the first maximum wins, and a NaN beats any number so
// that NaN propagates as in PyTorch. -1 for an empty window.
std::vector<int64_t> argmax_windows(const std::vector<double>& xv, const Layout4& x,
                                    const Layout4& y, const Pool2dParams& p) {
  std::vector<int64_t> arg(static_cast<size_t>(y.numel()), -1);
  for_each_window(x, y, p, [&](int64_t yi, const std::vector<int64_t>& window) {
    int64_t best = -1;
    for (const int64_t xi : window) {
      if (best < 0 || xv[xi] > xv[best] || (std::isnan(xv[xi]) && !std::isnan(xv[best]))) {
        best = xi;
      }
    }
    arg[yi] = best;
  });
  return arg;
}

}  // namespace

void max_pool2d_forward(const Tensor& x, Tensor& y, Tensor* workspace, const Pool2dParams& p) {
  const Layout4 xl(x.shape(), p.channels_last), yl(y.shape(), p.channels_last);
  const std::vector<double> xv = detail::to_doubles(x);
  const std::vector<int64_t> arg = argmax_windows(xv, xl, yl, p);
  std::vector<double> yv(arg.size()), wsv(arg.size());
  for (size_t i = 0; i < arg.size(); ++i) {
    yv[i] = arg[i] < 0 ? -std::numeric_limits<double>::infinity() : xv[arg[i]];
    wsv[i] = static_cast<double>(arg[i]);
  }
  detail::from_doubles(yv, y);
  if (workspace) {
    *workspace = Tensor::empty(y.shape(), {DType::int64, y.device()});
    detail::from_doubles(wsv, *workspace);
  }
}

// dx[argmax of each window] += dy. Without a workspace (another backend's forward, or none) the
// argmax is recomputed from x, which gives the same indices.
void max_pool2d_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace, Tensor& dx,
                         const Pool2dParams& p) {
  const Layout4 xl(dx.shape(), p.channels_last), yl(dy.shape(), p.channels_last);
  std::vector<int64_t> arg;
  if (workspace.defined() && workspace.dtype() == DType::int64 && workspace.shape() == dy.shape()) {
    for (const double v : detail::to_doubles(workspace)) arg.push_back(detail::to_index(v));
  } else {
    arg = argmax_windows(detail::to_doubles(x), xl, yl, p);
  }
  const std::vector<double> dyv = detail::to_doubles(dy);
  std::vector<double> dxv(static_cast<size_t>(dx.numel()), 0.0);
  for (size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] >= 0) dxv[arg[i]] += dyv[i];
  }
  detail::from_doubles(dxv, dx);
}

void avg_pool2d_forward(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  const Layout4 xl(x.shape(), p.channels_last), yl(y.shape(), p.channels_last);
  const std::vector<double> xv = detail::to_doubles(x);
  std::vector<double> yv(static_cast<size_t>(y.numel()), 0.0);
  for_each_window(xl, yl, p, [&](int64_t yi, const std::vector<int64_t>& window) {
    double sum = 0.0;
    for (const int64_t xi : window) sum += xv[xi];
    yv[yi] = window.empty() ? 0.0 : sum / static_cast<double>(window.size());
  });
  detail::from_doubles(yv, y);
}

// Each window's dy is shared equally among its unpadded inputs.
void avg_pool2d_backward(const Tensor& dy, Tensor& dx, const Pool2dParams& p) {
  const Layout4 xl(dx.shape(), p.channels_last), yl(dy.shape(), p.channels_last);
  const std::vector<double> dyv = detail::to_doubles(dy);
  std::vector<double> dxv(static_cast<size_t>(dx.numel()), 0.0);
  for_each_window(xl, yl, p, [&](int64_t yi, const std::vector<int64_t>& window) {
    for (const int64_t xi : window) dxv[xi] += dyv[yi] / static_cast<double>(window.size());
  });
  detail::from_doubles(dxv, dx);
}

}  // namespace osprey::reference
