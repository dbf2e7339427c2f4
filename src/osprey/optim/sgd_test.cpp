#include "osprey/optim/sgd.h"

#include <gtest/gtest.h>

#include "osprey/core/error.h"
#include "osprey/optim/quadratic_test.h"

namespace osprey::optim {
namespace {

using namespace testing;  // NOLINT

// Golden values: PyTorch 1.13 (golden_values.py), float64, 6 steps.
TEST(SGDTest, PlainStepsMatchPyTorch) {
  SGD opt({.learning_rate = 0.1});
  expect_golden(run_quadratic(opt), golden::kSgd, 1e-12);
  EXPECT_EQ(opt.iterations(), 6);
  EXPECT_TRUE(opt.slot_names().empty());
}

TEST(SGDTest, MomentumStepsMatchPyTorch) {
  SGD opt({.learning_rate = 0.05, .momentum = 0.9});
  expect_golden(run_quadratic(opt), golden::kSgdMomentum, 1e-12);
  EXPECT_EQ(opt.slot_names(), std::vector<std::string>{"momentum"});
  EXPECT_TRUE(opt.slot("sequential/dense/kernel", "momentum").defined());
}

TEST(SGDTest, NesterovStepsMatchPyTorch) {
  SGD opt({.learning_rate = 0.05, .momentum = 0.9, .nesterov = true});
  expect_golden(run_quadratic(opt), golden::kSgdNesterov, 1e-12);
}

TEST(SGDTest, DecoupledWeightDecayWithMomentumMatchesPyTorchWithManualDecay) {
  SGD opt({.learning_rate = 0.05, .momentum = 0.9, .weight_decay = 0.1});
  expect_golden(run_quadratic(opt), golden::kSgdMomentumWeightDecay, 1e-12);
}

TEST(SGDTest, ClipvalueStepsMatchPyTorchClampedGradients) {
  SGD opt({.learning_rate = 0.1, .clipvalue = 0.5});
  expect_golden(run_quadratic(opt), golden::kSgdClipvalue, 1e-12);
}

TEST(SGDTest, Float32WeightsFollowTheFloat64GoldenValues) {
  SGD opt({.learning_rate = 0.05, .momentum = 0.9, .nesterov = true});
  expect_golden(run_quadratic(opt, DType::float32), golden::kSgdNesterov, 1e-5);
  EXPECT_EQ(opt.slot("sequential/dense/bias", "momentum").dtype(), DType::float32);
}

// Keras folds the learning rate into the velocity (m = momentum * m - lr * g), PyTorch applies
// it afterwards; they differ once lr changes, so this reference is Keras's formula by hand.
TEST(SGDTest, MomentumWithAScheduleFoldsTheRateIntoTheVelocityAsKeras) {
  const ExponentialDecay schedule(
      {.initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 0.5});
  SGD opt({.learning_rate = schedule, .momentum = 0.8, .nesterov = true});
  const std::vector<double> got = run_quadratic(opt);

  std::vector<double> w = vec(golden::kKernel0), a = vec(golden::kKernelA),
                      c = vec(golden::kKernelC);
  for (int i = 0; i < 3; ++i) {
    w.push_back(golden::kBias0[i]);
    a.push_back(golden::kBiasA[i]);
    c.push_back(golden::kBiasC[i]);
  }
  std::vector<double> m(w.size(), 0.0);
  for (int step = 0; step < golden::kSteps; ++step) {
    const double lr = 0.1 * std::pow(0.5, step);
    for (size_t i = 0; i < w.size(); ++i) {
      const double g = a[i] * w[i] + c[i];
      m[i] = 0.8 * m[i] - lr * g;
      w[i] += 0.8 * m[i] - lr * g;
    }
  }
  expect_values_near(got, w, 1e-12);
}

TEST(SGDTest, MomentumOutsideZeroToOneIsAValueError) {
  expect_message<ValueError>([] { SGD({.momentum = 1.5}); },
                             "SGD: momentum must be in [0, 1]. Received: momentum=1.5");
  expect_message<ValueError>([] { SGD({.momentum = -0.1}); },
                             "SGD: momentum must be in [0, 1]. Received: momentum=-0.1");
}

TEST(SGDTest, DefaultsAreKeras) {
  SGD opt;
  EXPECT_DOUBLE_EQ(opt.learning_rate(), 0.01);
  EXPECT_EQ(opt.momentum(), 0.0);
  EXPECT_FALSE(opt.nesterov());
  EXPECT_EQ(opt.name(), "SGD");
}

TEST(SGDTest, ConfigRoundTripsWithKerasFieldNames) {
  SGD opt({.learning_rate = 0.2, .momentum = 0.5, .nesterov = true, .clipnorm = 2.0});
  const nlohmann::json c = opt.get_config();
  EXPECT_EQ(c["learning_rate"], 0.2);
  EXPECT_EQ(c["momentum"], 0.5);
  EXPECT_EQ(c["nesterov"], true);
  EXPECT_EQ(c["clipnorm"], 2.0);
  EXPECT_TRUE(c["weight_decay"].is_null());
  EXPECT_EQ(SGD::from_config(c).get_config(), c);
}

}  // namespace
}  // namespace osprey::optim
