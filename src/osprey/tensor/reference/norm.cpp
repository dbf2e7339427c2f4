// Reference batch and layer normalization, forward and backward. Both normalize x into
// xhat = (x - mean) * invstd with the biased variance, then y = gamma * xhat + beta; they differ
// only in which elements share statistics: batch norm shares them across every axis but the
// channel axis, layer norm across the trailing norm_size elements of each row.
//
// The backward passes are the training-mode gradients, through the statistics:
//   dx = invstd * (g - mean(g) - xhat * mean(g * xhat)),  g = gamma * dy,
// with the means over each group of elements that shares statistics.

#include <cmath>

#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

// x seen as [outer, C, inner] around the channel axis.
struct ChannelSplit {
  int64_t outer, channels, inner;
  ChannelSplit(const Shape& s, int channel_axis) {
    const int axis = normalize_axis(channel_axis, s.ndim(), "batch_norm");
    outer = detail::prod(s, 0, axis);
    channels = s[axis];
    inner = detail::prod(s, axis + 1, s.ndim());
  }
  int64_t index(int64_t o, int64_t c, int64_t i) const { return (o * channels + c) * inner + i; }
  int64_t per_channel() const { return outer * inner; }
};

std::vector<double> values_or(const Tensor* t, int64_t n, double fallback) {
  return t ? detail::to_doubles(*t) : std::vector<double>(static_cast<size_t>(n), fallback);
}

// The dx of the formula above for one element of a group of m that shares statistics; sum_g and
// sum_gx are the group's sums of g and g * xhat.
double normalized_grad(double g, double xhat, double invstd, double sum_g, double sum_gx,
                       int64_t m) {
  const double md = static_cast<double>(m);
  return invstd * (g - sum_g / md - xhat * sum_gx / md);
}

}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta, Tensor& mean,
                        Tensor& invstd, bool training, double eps, int channel_axis, Tensor& y) {
  const ChannelSplit s(x.shape(), channel_axis);
  const std::vector<double> xv = detail::to_doubles(x);
  const std::vector<double> gv = values_or(gamma, s.channels, 1.0);
  const std::vector<double> bv = values_or(beta, s.channels, 0.0);
  std::vector<double> mu(static_cast<size_t>(s.channels)), is(static_cast<size_t>(s.channels));
  if (training) {
    const double m = static_cast<double>(s.per_channel());
    for (int64_t c = 0; c < s.channels; ++c) {
      double sum = 0.0;
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) sum += xv[s.index(o, c, i)];
      mu[c] = sum / m;
      // Two passes (mean, then squared deviations): no cancellation, as an oracle should be.
      double sq = 0.0;
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) sq += std::pow(xv[s.index(o, c, i)] - mu[c], 2);
      is[c] = 1.0 / std::sqrt(sq / m + eps);
    }
    detail::from_doubles(mu, mean);
    detail::from_doubles(is, invstd);
  } else {
    mu = detail::to_doubles(mean);
    is = detail::to_doubles(invstd);
  }
  std::vector<double> yv(xv.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t k = s.index(o, c, i);
        yv[k] = (xv[k] - mu[c]) * is[c] * gv[c] + bv[c];
      }
  detail::from_doubles(yv, y);
}

void batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor* gamma, const Tensor& mean,
                         const Tensor& invstd, int channel_axis, Tensor& dx, Tensor* dgamma,
                         Tensor* dbeta) {
  const ChannelSplit s(x.shape(), channel_axis);
  const std::vector<double> xv = detail::to_doubles(x), dyv = detail::to_doubles(dy);
  const std::vector<double> gv = values_or(gamma, s.channels, 1.0);
  const std::vector<double> mu = detail::to_doubles(mean), is = detail::to_doubles(invstd);
  std::vector<double> sum_dy(static_cast<size_t>(s.channels), 0.0);
  std::vector<double> sum_dyx(static_cast<size_t>(s.channels), 0.0);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t k = s.index(o, c, i);
        sum_dy[c] += dyv[k];
        sum_dyx[c] += dyv[k] * (xv[k] - mu[c]) * is[c];
      }
  std::vector<double> dxv(xv.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t k = s.index(o, c, i);
        const double xhat = (xv[k] - mu[c]) * is[c];
        dxv[k] = normalized_grad(gv[c] * dyv[k], xhat, is[c], gv[c] * sum_dy[c], gv[c] * sum_dyx[c],
                                 s.per_channel());
      }
  detail::from_doubles(dxv, dx);
  if (dgamma) detail::from_doubles(sum_dyx, *dgamma);
  if (dbeta) detail::from_doubles(sum_dy, *dbeta);
}

void layer_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta, int64_t norm_size,
                        double eps, Tensor& y, Tensor& mean, Tensor& rstd) {
  OSPREY_ASSERT(norm_size > 0 && x.numel() % norm_size == 0,
                "reference::layer_norm: norm_size {} does not divide {}", norm_size, x.describe());
  const int64_t rows = x.numel() / norm_size;
  const std::vector<double> xv = detail::to_doubles(x);
  const std::vector<double> gv = values_or(gamma, norm_size, 1.0);
  const std::vector<double> bv = values_or(beta, norm_size, 0.0);
  std::vector<double> mu(static_cast<size_t>(rows)), rs(static_cast<size_t>(rows));
  std::vector<double> yv(xv.size());
  const double m = static_cast<double>(norm_size);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = xv.data() + r * norm_size;
    double sum = 0.0, sq = 0.0;
    for (int64_t j = 0; j < norm_size; ++j) sum += row[j];
    mu[r] = sum / m;
    for (int64_t j = 0; j < norm_size; ++j) sq += std::pow(row[j] - mu[r], 2);
    rs[r] = 1.0 / std::sqrt(sq / m + eps);
    for (int64_t j = 0; j < norm_size; ++j) {
      yv[r * norm_size + j] = (row[j] - mu[r]) * rs[r] * gv[j] + bv[j];
    }
  }
  detail::from_doubles(yv, y);
  detail::from_doubles(mu, mean);
  detail::from_doubles(rs, rstd);
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor* gamma, const Tensor& mean,
                         const Tensor& rstd, int64_t norm_size, Tensor& dx, Tensor* dgamma,
                         Tensor* dbeta) {
  const int64_t rows = x.numel() / norm_size;
  const std::vector<double> xv = detail::to_doubles(x), dyv = detail::to_doubles(dy);
  const std::vector<double> gv = values_or(gamma, norm_size, 1.0);
  const std::vector<double> mu = detail::to_doubles(mean), rs = detail::to_doubles(rstd);
  std::vector<double> dxv(xv.size());
  std::vector<double> dgv(static_cast<size_t>(norm_size), 0.0);
  std::vector<double> dbv(static_cast<size_t>(norm_size), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t j = 0; j < norm_size; ++j) {
      const int64_t k = r * norm_size + j;
      const double xhat = (xv[k] - mu[r]) * rs[r];
      sum_g += gv[j] * dyv[k];
      sum_gx += gv[j] * dyv[k] * xhat;
      dgv[j] += dyv[k] * xhat;
      dbv[j] += dyv[k];
    }
    for (int64_t j = 0; j < norm_size; ++j) {
      const int64_t k = r * norm_size + j;
      const double xhat = (xv[k] - mu[r]) * rs[r];
      dxv[k] = normalized_grad(gv[j] * dyv[k], xhat, rs[r], sum_g, sum_gx, norm_size);
    }
  }
  detail::from_doubles(dxv, dx);
  if (dgamma) detail::from_doubles(dgv, *dgamma);
  if (dbeta) detail::from_doubles(dbv, *dbeta);
}

}  // namespace osprey::reference
