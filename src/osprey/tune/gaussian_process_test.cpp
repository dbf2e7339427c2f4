// The GP against closed forms: posterior mean and variance of a 2-point and a 3-point fit
// computed by hand, the Matern 5/2 formula, and maximum likelihood improving the fit.
#include "osprey/tune/gaussian_process.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/core/error.h"

namespace osprey::tune {
namespace {

double matern(double r) {
  return (1 + std::sqrt(5.0) * r + 5.0 * r * r / 3.0) * std::exp(-std::sqrt(5.0) * r);
}

TEST(GaussianProcessTest, Matern52MatchesItsFormula) {
  EXPECT_DOUBLE_EQ(GaussianProcess::matern52(0), 1.0);
  // r = 1: (1 + sqrt5 + 5/3) e^-sqrt5
  EXPECT_NEAR(GaussianProcess::matern52(1.0),
              (1 + std::sqrt(5.0) + 5.0 / 3.0) * std::exp(-std::sqrt(5.0)), 1e-15);
}

TEST(GaussianProcessTest, TwoPointPosteriorMatchesTheClosedForm) {
  const double ls = 0.5, sv = 1.7, alpha = 0.01;
  GaussianProcess gp({.alpha = alpha,
                      .optimize_kernel = false,
                      .length_scale = ls,
                      .signal_variance = sv,
                      .normalize_y = false});
  gp.fit({{0.2}, {0.6}}, {1.0, -0.5});
  // K = [[a, b], [b, a]], a = sv + alpha, b = sv k(0.4 / ls); K^-1 = [[a, -b], [-b, a]] / (a^2 -
  // b^2).
  const double a = sv + alpha, b = sv * matern(0.4 / ls), det = a * a - b * b;
  const double x = 0.35;
  const double k1 = sv * matern(0.15 / ls), k2 = sv * matern(0.25 / ls);
  const double w1 = (a * 1.0 - b * -0.5) / det, w2 = (-b * 1.0 + a * -0.5) / det;
  const double mean = k1 * w1 + k2 * w2;
  const double var = sv - (k1 * (a * k1 - b * k2) + k2 * (-b * k1 + a * k2)) / det;
  const auto [m, v] = gp.predict({x});
  EXPECT_NEAR(m, mean, 1e-12);
  EXPECT_NEAR(v, var, 1e-12);
  // At a training point the mean is close to the target and the variance close to the noise.
  const auto [m0, v0] = gp.predict({0.2});
  EXPECT_NEAR(m0, 1.0, 0.02);
  EXPECT_LT(v0, 2 * alpha);
  // Far away: the prior.
  const auto [mf, vf] = gp.predict({50.0});
  EXPECT_NEAR(mf, 0.0, 1e-9);
  EXPECT_NEAR(vf, sv, 1e-9);
}

TEST(GaussianProcessTest, ThreePointTwoDimensionalPosteriorMatchesAnExplicitInverse) {
  GaussianProcess gp({.alpha = 1e-3,
                      .optimize_kernel = false,
                      .length_scale = 0.3,
                      .signal_variance = 1.0,
                      .normalize_y = false});
  const std::vector<std::vector<double>> X = {{0.1, 0.2}, {0.5, 0.9}, {0.8, 0.3}};
  const std::vector<double> y = {0.3, -1.2, 0.8};
  gp.fit(X, y);
  auto k = [](const std::vector<double>& p, const std::vector<double>& q) {
    return matern(std::hypot(p[0] - q[0], p[1] - q[1]) / 0.3);
  };
  double K[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) K[i][j] = k(X[i], X[j]) + (i == j ? 1e-3 : 0);
  // Inverse by cofactors.
  const double det = K[0][0] * (K[1][1] * K[2][2] - K[1][2] * K[2][1]) -
                     K[0][1] * (K[1][0] * K[2][2] - K[1][2] * K[2][0]) +
                     K[0][2] * (K[1][0] * K[2][1] - K[1][1] * K[2][0]);
  double inv[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      inv[i][j] = (K[r0][c0] * K[r1][c1] - K[r0][c1] * K[r1][c0]) / det;
    }
  }
  const std::vector<double> x = {0.4, 0.5};
  double ks[3], mean = 0, quad = 0;
  for (int i = 0; i < 3; ++i) ks[i] = k(x, X[i]);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      mean += ks[i] * inv[i][j] * y[j];
      quad += ks[i] * inv[i][j] * ks[j];
    }
  }
  const auto [m, v] = gp.predict(x);
  EXPECT_NEAR(m, mean, 1e-10);
  EXPECT_NEAR(v, 1.0 - quad, 1e-10);
}

TEST(GaussianProcessTest, NormalizationScalesMeanAndVarianceBack) {
  GaussianProcess raw(
      {.alpha = 1e-4, .optimize_kernel = false, .length_scale = 0.4, .normalize_y = false});
  GaussianProcess scaled(
      {.alpha = 1e-4, .optimize_kernel = false, .length_scale = 0.4, .normalize_y = true});
  const std::vector<std::vector<double>> X = {{0.0}, {0.3}, {0.7}, {1.0}};
  const std::vector<double> y = {1, 3, 2, 5};
  const double mu = 2.75,
               sd = std::sqrt((1.75 * 1.75 + 0.25 * 0.25 + 0.75 * 0.75 + 2.25 * 2.25) / 4);
  std::vector<double> z;
  for (double v : y) z.push_back((v - mu) / sd);
  raw.fit(X, z);
  scaled.fit(X, y);
  const auto [mz, vz] = raw.predict({0.5});
  const auto [my, vy] = scaled.predict({0.5});
  EXPECT_NEAR(my, mz * sd + mu, 1e-10);
  EXPECT_NEAR(vy, vz * sd * sd, 1e-10);
}

TEST(GaussianProcessTest, MaximumLikelihoodBeatsTheDefaultKernel) {
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (int i = 0; i < 12; ++i) {
    const double a = i / 11.0, b = std::fmod(i * 0.37, 1.0);
    X.push_back({a, b});
    y.push_back(std::sin(12 * a) + 0.05 * b);  // fast in a, nearly flat in b
  }
  GaussianProcess fixed({.optimize_kernel = false});
  fixed.fit(X, y);
  GaussianProcess fitted;
  fitted.fit(X, y);
  EXPECT_GT(fitted.log_marginal_likelihood(), fixed.log_marginal_likelihood());
  // The flat dimension gets the longer length scale.
  EXPECT_GT(fitted.length_scales()[1], fitted.length_scales()[0]);
}

TEST(GaussianProcessTest, BadInputIsAValueError) {
  GaussianProcess gp;
  EXPECT_THROW(gp.fit({}, {}), ValueError);
  EXPECT_THROW(gp.fit({{0.1}, {0.2, 0.3}}, {1, 2}), ValueError);
  EXPECT_THROW(gp.fit({{0.1}}, {NAN}), ValueError);
  EXPECT_THROW(gp.predict({0.5}), ValueError);
}

}  // namespace
}  // namespace osprey::tune
