#include "osprey/optim/rmsprop.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/optim/quadratic_test.h"

namespace osprey::optim {
namespace {

using namespace testing;  // NOLINT

// Keras's RMSprop puts epsilon inside the square root, PyTorch outside, so PyTorch's golden
// values (golden_values.py) use epsilon 0, where the two agree; for Keras's epsilon the
// reference is this hand-written double version of Keras's formulas, itself checked against
// PyTorch at epsilon 0 below.
struct Reference {
  double lr, rho, momentum, epsilon;
  bool centered;
  std::optional<double> clipnorm;

  std::vector<double> run() const {
    std::vector<std::vector<double>> w = {vec(golden::kKernel0), vec(golden::kBias0)};
    const std::vector<std::vector<double>> a = {vec(golden::kKernelA), vec(golden::kBiasA)};
    const std::vector<std::vector<double>> c = {vec(golden::kKernelC), vec(golden::kBiasC)};
    std::vector<std::vector<double>> vel = {std::vector<double>(6), std::vector<double>(3)};
    auto mom = vel, avg = vel;
    for (int step = 0; step < golden::kSteps; ++step) {
      for (size_t v = 0; v < w.size(); ++v) {
        std::vector<double> g(w[v].size());
        double sq = 0.0;
        for (size_t i = 0; i < g.size(); ++i) {
          g[i] = a[v][i] * w[v][i] + c[v][i];
          sq += g[i] * g[i];
        }
        const double clip = clipnorm ? *clipnorm / std::max(std::sqrt(sq), *clipnorm) : 1.0;
        for (size_t i = 0; i < g.size(); ++i) {
          const double gi = g[i] * clip;
          vel[v][i] = rho * vel[v][i] + (1.0 - rho) * gi * gi;
          double denominator = vel[v][i] + epsilon;
          if (centered) {
            avg[v][i] = rho * avg[v][i] + (1.0 - rho) * gi;
            denominator = vel[v][i] - avg[v][i] * avg[v][i] + epsilon;
          }
          const double increment = lr * gi / std::sqrt(denominator);
          if (momentum > 0.0) {
            mom[v][i] = momentum * mom[v][i] + increment;
            w[v][i] -= mom[v][i];
          } else {
            w[v][i] -= increment;
          }
        }
      }
    }
    std::vector<double> out = w[0];
    out.insert(out.end(), w[1].begin(), w[1].end());
    return out;
  }
};

TEST(RMSpropTest, StepsMatchPyTorchAtEpsilonZero) {
  RMSprop opt({.learning_rate = 0.01, .epsilon = 0.0});
  expect_golden(run_quadratic(opt), golden::kRmspropEps0, 1e-12);
  expect_golden(Reference{0.01, 0.9, 0.0, 0.0, false, {}}.run(), golden::kRmspropEps0, 1e-12);
}

TEST(RMSpropTest, MomentumStepsMatchPyTorchAtEpsilonZero) {
  RMSprop opt({.learning_rate = 0.01, .momentum = 0.9, .epsilon = 0.0});
  expect_golden(run_quadratic(opt), golden::kRmspropMomentumEps0, 1e-12);
  expect_golden(Reference{0.01, 0.9, 0.9, 0.0, false, {}}.run(), golden::kRmspropMomentumEps0,
                1e-12);
}

TEST(RMSpropTest, CenteredStepsMatchPyTorchAtEpsilonZero) {
  RMSprop opt({.learning_rate = 0.01, .epsilon = 0.0, .centered = true});
  expect_golden(run_quadratic(opt), golden::kRmspropCenteredEps0, 1e-12);
  expect_golden(Reference{0.01, 0.9, 0.0, 0.0, true, {}}.run(), golden::kRmspropCenteredEps0,
                1e-12);
}

TEST(RMSpropTest, CenteredMomentumWithClipnormMatchesPyTorchAtEpsilonZero) {
  RMSprop opt(
      {.learning_rate = 0.01, .momentum = 0.5, .epsilon = 0.0, .centered = true, .clipnorm = 1.0});
  expect_golden(run_quadratic(opt), golden::kRmspropCenteredMomentumClipnormEps0, 1e-12);
  expect_golden(Reference{0.01, 0.9, 0.5, 0.0, true, 1.0}.run(),
                golden::kRmspropCenteredMomentumClipnormEps0, 1e-12);
}

TEST(RMSpropTest, KerasEpsilonGoesInsideTheSquareRoot) {
  // A large epsilon makes the placement visible: sqrt(v + eps) != sqrt(v) + eps.
  for (bool centered : {false, true}) {
    RMSprop opt(
        {.learning_rate = 0.01, .rho = 0.8, .momentum = 0.3, .epsilon = 0.1, .centered = centered});
    expect_values_near(run_quadratic(opt), Reference{0.01, 0.8, 0.3, 0.1, centered, {}}.run(),
                       1e-12, centered ? "centered" : "plain");
  }
}

TEST(RMSpropTest, DefaultEpsilonMatchesTheHandReference) {
  RMSprop opt({.learning_rate = 0.01, .centered = true});
  expect_values_near(run_quadratic(opt), Reference{0.01, 0.9, 0.0, 1e-7, true, {}}.run(), 1e-12);
}

TEST(RMSpropTest, Float32WeightsFollowTheFloat64Reference) {
  RMSprop opt({.learning_rate = 0.01, .momentum = 0.5, .centered = true});
  expect_values_near(run_quadratic(opt, DType::float32),
                     Reference{0.01, 0.9, 0.5, 1e-7, true, {}}.run(), 1e-5);
}

TEST(RMSpropTest, SlotsFollowTheOptions) {
  EXPECT_EQ(RMSprop().slot_names(), std::vector<std::string>{"velocity"});
  EXPECT_EQ(RMSprop({.momentum = 0.9, .centered = true}).slot_names(),
            (std::vector<std::string>{"velocity", "momentum", "average_gradient"}));
}

TEST(RMSpropTest, DefaultsAreKeras) {
  RMSprop opt;
  EXPECT_DOUBLE_EQ(opt.learning_rate(), 0.001);
  EXPECT_EQ(opt.rho(), 0.9);
  EXPECT_EQ(opt.momentum(), 0.0);
  EXPECT_EQ(opt.epsilon(), 1e-7);
  EXPECT_FALSE(opt.centered());
  EXPECT_EQ(opt.name(), "rmsprop");
}

TEST(RMSpropTest, BadOptionsAreValueErrors) {
  expect_message<ValueError>([] { RMSprop({.rho = 1.0}); },
                             "RMSprop: rho must be in [0, 1). Received: rho=1");
  expect_message<ValueError>([] { RMSprop({.momentum = -0.5}); },
                             "RMSprop: momentum must be in [0, 1). Received: momentum=-0.5");
  expect_message<ValueError>([] { RMSprop({.epsilon = -1.0}); },
                             "RMSprop: epsilon must be >= 0. Received: epsilon=-1");
}

TEST(RMSpropTest, ConfigRoundTripsWithKerasFieldNames) {
  RMSprop opt(
      {.learning_rate = 0.01, .rho = 0.8, .momentum = 0.5, .centered = true, .clipvalue = 3.0});
  const nlohmann::json c = opt.get_config();
  EXPECT_EQ(c["rho"], 0.8);
  EXPECT_EQ(c["momentum"], 0.5);
  EXPECT_EQ(c["centered"], true);
  EXPECT_EQ(c["clipvalue"], 3.0);
  EXPECT_EQ(RMSprop::from_config(c).get_config(), c);
}

}  // namespace
}  // namespace osprey::optim
