#include "osprey/optim/adam.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/optim/quadratic_test.h"

namespace osprey::optim {
namespace {

using namespace testing;  // NOLINT

// Golden values: PyTorch 1.13 with eps set to 1e-7 / sqrt(1 - beta_2^t) at step t, which is
// exactly Keras's update (golden_values.py explains why), float64, 6 steps.
TEST(AdamTest, StepsMatchPyTorchWithKerasEpsilon) {
  Adam opt({.learning_rate = 0.01});
  expect_golden(run_quadratic(opt), golden::kAdam, 1e-12);
  EXPECT_EQ(opt.slot_names(), (std::vector<std::string>{"momentum", "velocity"}));
}

TEST(AdamTest, AmsgradStepsMatchPyTorch) {
  Adam opt({.learning_rate = 0.01, .beta_1 = 0.8, .beta_2 = 0.5, .amsgrad = true});
  expect_golden(run_quadratic(opt), golden::kAdamAmsgrad, 1e-12);
  EXPECT_EQ(opt.slot_names(), (std::vector<std::string>{"momentum", "velocity", "velocity_hat"}));
}

TEST(AdamTest, AmsgradDiffersFromAdamWhenTheVelocityShrinks) {
  Adam plain({.learning_rate = 0.01, .beta_1 = 0.8, .beta_2 = 0.5});
  const std::vector<double> got = run_quadratic(plain);
  double diff = 0.0;
  for (size_t i = 0; i < got.size(); ++i) diff += std::abs(got[i] - golden::kAdamAmsgrad[i]);
  EXPECT_GT(diff, 1e-4);
}

TEST(AdamTest, ClipnormClipsEachVariableByItsOwnNorm) {
  Adam opt({.learning_rate = 0.01, .clipnorm = 1.0});
  expect_golden(run_quadratic(opt), golden::kAdamClipnorm, 1e-12);
}

TEST(AdamTest, GlobalClipnormClipsAllVariablesByTheirJointNorm) {
  Adam opt({.learning_rate = 0.01, .global_clipnorm = 2.0});
  expect_golden(run_quadratic(opt), golden::kAdamGlobalClipnorm, 1e-12);
}

TEST(AdamTest, AScheduleIsEvaluatedAtIterationsBeforeEachStep) {
  Adam opt({.learning_rate = ExponentialDecay(
                {.initial_learning_rate = 0.05, .decay_steps = 2, .decay_rate = 0.5})});
  expect_golden(run_quadratic(opt), golden::kAdamExponentialDecay, 1e-12);
  EXPECT_NEAR(opt.learning_rate(), 0.05 * std::pow(0.5, 3.0), 1e-15);
}

TEST(AdamTest, Float32WeightsFollowTheFloat64GoldenValues) {
  Adam opt({.learning_rate = 0.01, .beta_1 = 0.8, .beta_2 = 0.5, .amsgrad = true});
  expect_golden(run_quadratic(opt, DType::float32), golden::kAdamAmsgrad, 1e-5);
  EXPECT_EQ(opt.slot("sequential/dense/kernel", "velocity_hat").dtype(), DType::float32);
}

TEST(AdamTest, Float64WeightsKeepFloat64Slots) {
  Adam opt;
  run_quadratic(opt, DType::float64, 1);
  EXPECT_EQ(opt.slot("sequential/dense/kernel", "momentum").dtype(), DType::float64);
}

TEST(AdamTest, LossScaleFactorDividesTheGradientsBeforeClipping) {
  Adam opt({.learning_rate = 0.01, .clipnorm = 1.0, .loss_scale_factor = 1024.0});
  expect_golden(run_quadratic(opt, DType::float64, golden::kSteps, 1024.0), golden::kAdamClipnorm,
                1e-12);
  EXPECT_EQ(opt.scale_loss(2.0), 2048.0);
}

TEST(AdamWTest, StepsMatchPyTorchAdamW) {
  AdamW opt({.learning_rate = 0.01, .weight_decay = 0.1});
  expect_golden(run_quadratic(opt), golden::kAdamw, 1e-12);
  EXPECT_EQ(opt.class_name(), "AdamW");
}

TEST(AdamWTest, AmsgradWithClipvalueMatchesPyTorch) {
  AdamW opt({.learning_rate = 0.01, .beta_2 = 0.5, .amsgrad = true, .clipvalue = 0.5});
  expect_golden(run_quadratic(opt), golden::kAdamwAmsgradClipvalue, 1e-12);
}

TEST(AdamWTest, AdamWithWeightDecayIsAdamW) {
  Adam opt({.learning_rate = 0.01, .weight_decay = 0.1});
  expect_golden(run_quadratic(opt), golden::kAdamw, 1e-12);
}

TEST(AdamWTest, ExcludedVariablesGetNoWeightDecay) {
  AdamW opt({.learning_rate = 0.01, .weight_decay = 0.1});
  opt.exclude_from_weight_decay({"bias"});
  const std::vector<double> got = run_quadratic(opt);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], golden::kAdamw[i], 1e-12) << i;  // decayed
  for (int i = 6; i < 9; ++i) EXPECT_NEAR(got[i], golden::kAdam[i], 1e-12) << i;   // plain Adam
}

TEST(AdamWTest, DefaultsAreKeras) {
  AdamW opt;
  EXPECT_DOUBLE_EQ(*opt.options().weight_decay, 0.004);
  EXPECT_DOUBLE_EQ(opt.learning_rate(), 0.001);
  EXPECT_EQ(opt.beta_1(), 0.9);
  EXPECT_EQ(opt.beta_2(), 0.999);
  EXPECT_EQ(opt.epsilon(), 1e-7);
  EXPECT_EQ(opt.name(), "adamw");
}

TEST(AdamTest, BetasOutsideZeroToOneAreValueErrors) {
  expect_message<ValueError>([] { Adam({.beta_1 = 1.0}); },
                             "Adam: beta_1 must be in [0, 1). Received: beta_1=1");
  expect_message<ValueError>([] { Adam({.beta_2 = -0.5}); },
                             "Adam: beta_2 must be in [0, 1). Received: beta_2=-0.5");
  expect_message<ValueError>([] { AdamW({.beta_1 = 1.5}); },
                             "AdamW: beta_1 must be in [0, 1). Received: beta_1=1.5");
  expect_message<ValueError>([] { Adam({.epsilon = -1e-7}); },
                             "Adam: epsilon must be >= 0. Received: epsilon=-1e-07");
  expect_message<ValueError>([] { AdamW({.weight_decay = -0.1}); },
                             "AdamW: weight_decay must be >= 0. Received: weight_decay=-0.1");
}

TEST(AdamWTest, ConfigWithNullWeightDecayIsAValueError) {
  nlohmann::json c = AdamW().get_config();
  c["weight_decay"] = nullptr;
  expect_message<ValueError>([&] { AdamW::from_config(c); },
                             "AdamW: weight_decay must be a number. Received: weight_decay=None");
}

TEST(AdamTest, ConfigRoundTripsWithKerasFieldNames) {
  Adam opt({.learning_rate = CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 100}),
            .beta_1 = 0.8,
            .amsgrad = true,
            .global_clipnorm = 1.5,
            .loss_scale_factor = 128.0,
            .name = "my_adam"});
  const nlohmann::json c = opt.get_config();
  EXPECT_EQ(c["beta_1"], 0.8);
  EXPECT_EQ(c["beta_2"], 0.999);
  EXPECT_EQ(c["epsilon"], 1e-7);
  EXPECT_EQ(c["amsgrad"], true);
  EXPECT_EQ(c["name"], "my_adam");
  EXPECT_EQ(c["global_clipnorm"], 1.5);
  EXPECT_EQ(c["loss_scale_factor"], 128.0);
  EXPECT_EQ(c["learning_rate"]["class_name"], "CosineDecay");
  EXPECT_EQ(c["learning_rate"]["config"]["decay_steps"], 100);
  EXPECT_EQ(c["use_ema"], false);
  const Adam back = Adam::from_config(c);
  EXPECT_EQ(back.get_config(), c);
  EXPECT_TRUE(back.learning_rate_option().is_schedule());
}

}  // namespace
}  // namespace osprey::optim
