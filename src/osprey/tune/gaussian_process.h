// GaussianProcess: the surrogate model of BayesianOptimization — GP regression with a Matern
// 5/2 kernel (one length scale per input dimension, a signal variance) and Gaussian noise
// `alpha` on the diagonal, on targets standardized to mean 0, variance 1. fit() chooses the
// kernel hyperparameters by maximizing the log marginal likelihood (coordinate search over log
// length scales and log variance, from the best isotropic setting), so no optimizer library
// is needed for the few dozen points a search has.
//   GaussianProcess gp({.alpha = 1e-4});
//   gp.fit(X, y);                          // X: n points of d coordinates in [0, 1]
//   auto [mean, var] = gp.predict(x);
// Written by hand: no Debian C++ package provides GP regression; the linear algebra is an
// n x n Cholesky factorization, n <= a few hundred.
#pragma once

#include <utility>
#include <vector>

namespace osprey::tune {

struct GaussianProcessOptions {
  double alpha = 1e-4;           // noise variance added to the diagonal (standardized units)
  bool optimize_kernel = true;   // maximum likelihood; false keeps the values below
  double length_scale = 1.0;     // initial / fixed, every dimension
  double signal_variance = 1.0;  // initial / fixed
  bool normalize_y = true;       // standardize targets (mean 0, std 1) before fitting
};

class GaussianProcess {
 public:
  explicit GaussianProcess(GaussianProcessOptions options = {}) : o_(options) {}

  // X: n points, each of d coordinates; y: n targets. ValueError on empty or ragged input.
  void fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y);
  // Posterior mean and variance of the latent function at x, in the units of y.
  std::pair<double, double> predict(const std::vector<double>& x) const;
  // log p(y | X, kernel) of the standardized targets at the current kernel hyperparameters.
  double log_marginal_likelihood() const { return lml_; }

  // Matern 5/2 of the scaled distance r: (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r).
  static double matern52(double r);
  double kernel(const std::vector<double>& a, const std::vector<double>& b) const;
  const std::vector<double>& length_scales() const { return length_scales_; }
  double signal_variance() const { return signal_variance_; }

 private:
  // Factorizes K for the current hyperparameters; returns the log marginal likelihood
  // (-inf when K is not positive definite).
  double factorize();

  GaussianProcessOptions o_;
  std::vector<std::vector<double>> X_;
  std::vector<double> y_;  // standardized
  double y_mean_ = 0, y_std_ = 1;
  std::vector<double> length_scales_;
  double signal_variance_ = 1;
  std::vector<double> sq_diff_;  // (x_i[k] - x_j[k])^2 for j <= i, packed per pair: fit() reuses it
  std::vector<double> L_;        // Cholesky factor of K, row-major n x n (lower)
  std::vector<double> weights_;  // K^-1 y
  double lml_ = 0;
};

}  // namespace osprey::tune
