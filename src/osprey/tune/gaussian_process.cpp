#include "osprey/tune/gaussian_process.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "osprey/core/error.h"

namespace osprey::tune {

double GaussianProcess::matern52(double r) {
  const double s = std::sqrt(5.0) * r;
  return (1.0 + s + s * s / 3.0) * std::exp(-s);
}

double GaussianProcess::kernel(const std::vector<double>& a, const std::vector<double>& b) const {
  double r2 = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const double d = (a[k] - b[k]) / length_scales_[k];
    r2 += d * d;
  }
  return signal_variance_ * matern52(std::sqrt(r2));
}

double GaussianProcess::factorize() {
  const size_t n = X_.size(), d = length_scales_.size();
  L_.assign(n * n, 0.0);
  std::vector<double> inv_ls2(d);
  for (size_t k = 0; k < d; ++k) inv_ls2[k] = 1.0 / (length_scales_[k] * length_scales_[k]);
  const double* sq = sq_diff_.data();
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j, sq += d) {
      double r2 = 0;
      for (size_t k = 0; k < d; ++k) r2 += sq[k] * inv_ls2[k];
      L_[i * n + j] = signal_variance_ * matern52(std::sqrt(r2)) + (i == j ? o_.alpha : 0.0);
    }
  }
  // In-place Cholesky, lower triangle.
  for (size_t j = 0; j < n; ++j) {
    double d = L_[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= L_[j * n + k] * L_[j * n + k];
    if (!(d > 0)) return -std::numeric_limits<double>::infinity();
    const double ljj = std::sqrt(d);
    L_[j * n + j] = ljj;
    for (size_t i = j + 1; i < n; ++i) {
      double s = L_[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= L_[i * n + k] * L_[j * n + k];
      L_[i * n + j] = s / ljj;
    }
  }
  // weights = K^-1 y = L^-T L^-1 y.
  weights_ = y_;
  for (size_t i = 0; i < n; ++i) {
    double s = weights_[i];
    for (size_t k = 0; k < i; ++k) s -= L_[i * n + k] * weights_[k];
    weights_[i] = s / L_[i * n + i];
  }
  double quad = 0, logdet = 0;
  for (size_t i = 0; i < n; ++i) {
    quad += weights_[i] * weights_[i];
    logdet += std::log(L_[i * n + i]);
  }
  for (size_t i = n; i-- > 0;) {
    double s = weights_[i];
    for (size_t k = i + 1; k < n; ++k) s -= L_[k * n + i] * weights_[k];
    weights_[i] = s / L_[i * n + i];
  }
  return -0.5 * quad - logdet - 0.5 * static_cast<double>(n) * std::log(2 * std::numbers::pi);
}

void GaussianProcess::fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  OSPREY_CHECK(!X.empty() && X.size() == y.size(),
               "GaussianProcess::fit: need as many targets as points, at least one. "
               "Received: {} points, {} targets",
               X.size(), y.size());
  const size_t d = X[0].size();
  for (const auto& x : X) {
    OSPREY_CHECK(x.size() == d,
                 "GaussianProcess::fit: every point needs {} coordinates, one has {}", d, x.size());
  }
  for (double v : y)
    OSPREY_CHECK(std::isfinite(v), "GaussianProcess::fit: targets must be finite, got {}", v);
  X_ = X;
  sq_diff_.clear();
  sq_diff_.reserve(X.size() * (X.size() + 1) / 2 * d);
  for (size_t i = 0; i < X.size(); ++i) {
    for (size_t j = 0; j <= i; ++j) {
      for (size_t k = 0; k < d; ++k) sq_diff_.push_back((X[i][k] - X[j][k]) * (X[i][k] - X[j][k]));
    }
  }
  const double n = static_cast<double>(y.size());
  y_mean_ = 0;
  y_std_ = 1;
  if (o_.normalize_y) {
    for (double v : y) y_mean_ += v / n;
    double var = 0;
    for (double v : y) var += (v - y_mean_) * (v - y_mean_) / n;
    y_std_ = var > 1e-24 ? std::sqrt(var) : 1.0;
  }
  y_.resize(y.size());
  for (size_t i = 0; i < y.size(); ++i) y_[i] = (y[i] - y_mean_) / y_std_;
  length_scales_.assign(d, o_.length_scale);
  signal_variance_ = o_.signal_variance;
  if (!o_.optimize_kernel || X.size() < 2 || d == 0) {
    lml_ = factorize();
    OSPREY_CHECK(std::isfinite(lml_),
                 "GaussianProcess::fit: the kernel matrix is not positive definite; raise alpha");
    return;
  }
  // Maximum likelihood by coordinate search on a log grid: the likelihood surface of a few
  // dozen points is flat and multi-modal, where a grid is as good as a gradient method and
  // cannot diverge.
  static constexpr double kScales[] = {0.02, 0.05, 0.1, 0.2, 0.35, 0.6, 1.0, 2.0, 5.0};
  static constexpr double kVariances[] = {0.3, 1.0, 3.0};
  double best = -std::numeric_limits<double>::infinity();
  std::vector<double> best_ls = length_scales_;
  double best_sv = signal_variance_;
  auto consider = [&] {
    const double l = factorize();
    if (l > best) {
      best = l;
      best_ls = length_scales_;
      best_sv = signal_variance_;
    }
  };
  for (double sv : kVariances) {
    for (double ls : kScales) {
      length_scales_.assign(d, ls);
      signal_variance_ = sv;
      consider();
    }
  }
  if (d > 1) {
    for (size_t k = 0; k < d; ++k) {
      length_scales_ = best_ls;
      signal_variance_ = best_sv;
      for (double ls : kScales) {
        length_scales_[k] = ls;
        consider();
      }
    }
  }
  OSPREY_CHECK(std::isfinite(best),
               "GaussianProcess::fit: the kernel matrix is not positive definite; raise alpha");
  length_scales_ = best_ls;
  signal_variance_ = best_sv;
  lml_ = factorize();
}

std::pair<double, double> GaussianProcess::predict(const std::vector<double>& x) const {
  const size_t n = X_.size();
  OSPREY_CHECK(n > 0, "GaussianProcess::predict: call fit() first");
  OSPREY_CHECK(x.size() == X_[0].size(),
               "GaussianProcess::predict: expected {} coordinates, received {}", X_[0].size(),
               x.size());
  std::vector<double> k(n);
  double mean = 0;
  for (size_t i = 0; i < n; ++i) {
    k[i] = kernel(x, X_[i]);
    mean += k[i] * weights_[i];
  }
  // v = L^-1 k; variance = k(x, x) - v.v
  double vv = 0;
  for (size_t i = 0; i < n; ++i) {
    double s = k[i];
    for (size_t j = 0; j < i; ++j) s -= L_[i * n + j] * k[j];
    k[i] = s / L_[i * n + i];
    vv += k[i] * k[i];
  }
  const double var = std::max(signal_variance_ - vv, 1e-12);
  return {mean * y_std_ + y_mean_, var * y_std_ * y_std_};
}

}  // namespace osprey::tune
