#include "osprey/optim/schedules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "osprey/core/error.h"
#include "osprey/optim/quadratic_test.h"

namespace osprey::optim {
namespace {

using testing::expect_message;

TEST(SchedulesTest, ConstantIsTheSameAtEveryStep) {
  const Constant c(0.25);
  EXPECT_EQ(c(0), 0.25);
  EXPECT_EQ(c(123456), 0.25);
}

TEST(SchedulesTest, ExponentialDecayIsContinuousOrStaircase) {
  const ExponentialDecay smooth(
      {.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  EXPECT_DOUBLE_EQ(smooth(0), 0.1);
  EXPECT_DOUBLE_EQ(smooth(5), 0.1 * std::pow(0.5, 0.5));
  EXPECT_DOUBLE_EQ(smooth(20), 0.025);
  const ExponentialDecay stairs(
      {.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true});
  EXPECT_DOUBLE_EQ(stairs(9), 0.1);
  EXPECT_DOUBLE_EQ(stairs(10), 0.05);
  EXPECT_DOUBLE_EQ(stairs(29), 0.025);
}

TEST(SchedulesTest, CosineDecayReachesAlphaTimesTheInitialRateAndStays) {
  const CosineDecay c({.initial_learning_rate = 1.0, .decay_steps = 100, .alpha = 0.1});
  EXPECT_DOUBLE_EQ(c(0), 1.0);
  EXPECT_NEAR(c(50), 0.1 + 0.9 * 0.5, 1e-15);
  EXPECT_NEAR(c(25), 0.1 + 0.9 * 0.5 * (1.0 + std::cos(std::numbers::pi / 4.0)), 1e-15);
  EXPECT_NEAR(c(100), 0.1, 1e-15);
  EXPECT_NEAR(c(1000), 0.1, 1e-15);
}

TEST(SchedulesTest, CosineDecayWarmsUpLinearlyToTheTargetThenDecaysFromIt) {
  const CosineDecay c({.initial_learning_rate = 0.0,
                       .decay_steps = 100,
                       .alpha = 0.0,
                       .warmup_target = 0.4,
                       .warmup_steps = 10});
  EXPECT_DOUBLE_EQ(c(0), 0.0);
  EXPECT_DOUBLE_EQ(c(5), 0.2);
  EXPECT_DOUBLE_EQ(c(10), 0.4);    // decay starts at the target
  EXPECT_NEAR(c(60), 0.2, 1e-15);  // half way through the decay
  EXPECT_NEAR(c(110), 0.0, 1e-15);
  EXPECT_NEAR(c(500), 0.0, 1e-15);
}

TEST(SchedulesTest, PiecewiseConstantChangesAfterEachBoundary) {
  const PiecewiseConstant p({.boundaries = {100, 110}, .values = {1.0, 0.5, 0.1}});
  EXPECT_EQ(p(0), 1.0);
  EXPECT_EQ(p(100), 1.0);  // Keras: values[0] while step <= boundaries[0]
  EXPECT_EQ(p(101), 0.5);
  EXPECT_EQ(p(110), 0.5);
  EXPECT_EQ(p(111), 0.1);
  EXPECT_EQ(p.class_name(), "PiecewiseConstantDecay");
}

TEST(SchedulesTest, LinearWarmupRisesFromTheBaseRateToTheScaledRate) {
  const double scaled = scaled_learning_rate(0.1, 8, "linear");
  const LinearWarmup w({.initial_learning_rate = 0.1, .warmup_steps = 4, .schedule = scaled});
  EXPECT_DOUBLE_EQ(w(0), 0.1);
  EXPECT_DOUBLE_EQ(w(1), 0.1 + 0.7 * 0.25);
  EXPECT_DOUBLE_EQ(w(2), 0.45);
  EXPECT_DOUBLE_EQ(w(4), 0.8);
  EXPECT_DOUBLE_EQ(w(1000), 0.8);
}

TEST(SchedulesTest, LinearWarmupThenFollowsTheWrappedScheduleUnshifted) {
  const PiecewiseConstant after({.boundaries = {10}, .values = {0.8, 0.08}});
  const LinearWarmup w({.initial_learning_rate = 0.1, .warmup_steps = 5, .schedule = after});
  EXPECT_DOUBLE_EQ(w(0), 0.1);
  EXPECT_DOUBLE_EQ(w(4), 0.1 + 0.7 * 0.8);
  EXPECT_DOUBLE_EQ(w(5), 0.8);
  EXPECT_DOUBLE_EQ(w(10), 0.8);
  EXPECT_DOUBLE_EQ(w(11), 0.08);
  const LinearWarmup none({.initial_learning_rate = 0.1, .warmup_steps = 0, .schedule = after});
  EXPECT_DOUBLE_EQ(none(0), 0.8);
}

TEST(SchedulesTest, ScaledLearningRateIsLinearOrSquareRoot) {
  EXPECT_DOUBLE_EQ(scaled_learning_rate(0.1, 4), 0.4);
  EXPECT_DOUBLE_EQ(scaled_learning_rate(0.1, 4, "sqrt"), 0.2);
  EXPECT_DOUBLE_EQ(scaled_learning_rate(0.1, 1, "sqrt"), 0.1);
  expect_message<ValueError>(
      [] { scaled_learning_rate(0.1, 4, "cubic"); },
      "scaled_learning_rate: rule must be \"linear\" or \"sqrt\". Received: rule=\"cubic\"");
  expect_message<ValueError>(
      [] { scaled_learning_rate(0.1, 0); },
      "scaled_learning_rate: num_replicas must be >= 1. Received: num_replicas=0");
}

TEST(SchedulesTest, EverySchedulesConfigRoundTrips) {
  const std::vector<LearningRate> all = {
      Constant(0.3),
      ExponentialDecay(
          {.initial_learning_rate = 0.1, .decay_steps = 7, .decay_rate = 0.9, .staircase = true}),
      CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 50, .alpha = 0.2}),
      CosineDecay({.initial_learning_rate = 0.0,
                   .decay_steps = 50,
                   .warmup_target = 0.5,
                   .warmup_steps = 5}),
      PiecewiseConstant({.boundaries = {3, 9}, .values = {0.3, 0.2, 0.1}}),
      LinearWarmup({.initial_learning_rate = 0.1,
                    .warmup_steps = 3,
                    .schedule = ExponentialDecay(
                        {.initial_learning_rate = 0.4, .decay_steps = 2, .decay_rate = 0.5})}),
  };
  for (const LearningRate& lr : all) {
    const nlohmann::json j = lr.to_config();
    const LearningRate back = LearningRate::from_config(j);
    EXPECT_EQ(back.to_config(), j);
    for (int64_t step : {0, 1, 4, 12, 60}) EXPECT_EQ(back(step), lr(step)) << j.dump();
  }
  EXPECT_EQ(LearningRate::from_config(0.02)(5), 0.02);
}

TEST(SchedulesTest, KerasSerializedSchedulesAreAccepted) {
  const nlohmann::json keras = {{"module", "keras.optimizers.schedules"},
                                {"class_name", "ExponentialDecay"},
                                {"config",
                                 {{"initial_learning_rate", 0.01},
                                  {"decay_steps", 1000.0},
                                  {"decay_rate", 0.96},
                                  {"staircase", false},
                                  {"name", "ExponentialDecay"}}},
                                {"registered_name", nullptr}};
  const auto s = schedule_from_config(keras);
  EXPECT_DOUBLE_EQ((*s)(1000), 0.01 * 0.96);
}

TEST(SchedulesTest, BadSchedulesAreValueErrors) {
  expect_message<ValueError>(
      [] { ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 0, .decay_rate = 0.5}); },
      "ExponentialDecay: decay_steps must be > 0. Received: decay_steps=0");
  expect_message<ValueError>([] { CosineDecay({.initial_learning_rate = 0.1, .decay_steps = -3}); },
                             "CosineDecay: decay_steps must be > 0. Received: decay_steps=-3");
  expect_message<ValueError>(
      [] {
        PiecewiseConstant({.boundaries = {1, 2}, .values = {0.1, 0.2}});
      },
      "PiecewiseConstantDecay: the length of boundaries should be 1 less than the length of "
      "values. "
      "Received: boundaries=[1, 2] of length 2, and values=[0.1, 0.2] of length 2.");
  expect_message<ValueError>(
      [] {
        PiecewiseConstant({.boundaries = {5, 5}, .values = {1, 2, 3}});
      },
      "PiecewiseConstantDecay: boundaries must be strictly increasing. Received: "
      "boundaries=[5, 5]");
  expect_message<ValueError>(
      [] {
        schedule_from_config({{"class_name", "Triangle"}, {"config", nlohmann::json::object()}});
      },
      "schedule_from_config: unknown schedule class \"Triangle\". Expected one of: Constant, "
      "ExponentialDecay, CosineDecay, PiecewiseConstantDecay, LinearWarmup");
  expect_message<ValueError>(
      [] {
        ExponentialDecay::from_config({{"decay_steps", 10}, {"decay_rate", 0.5}, {"rate", 1}});
      },
      "ExponentialDecay: argument(s) not recognized: rate");
  expect_message<ValueError>(
      [] {
        CosineDecay::from_config({{"decay_steps", "ten"}});
      },
      "CosineDecay: config field \"decay_steps\" must be an integer. Received: \"ten\"");
  // Numbers no int64 holds are refused before any cast (a cast of 1e300 is undefined behaviour).
  expect_message<ValueError>(
      [] {
        CosineDecay::from_config({{"decay_steps", 1e300}});
      },
      "CosineDecay: config field \"decay_steps\" must be an integer. "
      "Received: 1e+300");
  expect_message<ValueError>(
      [] {
        CosineDecay::from_config({{"decay_steps", uint64_t{18446744073709551615U}}});
      },
      "CosineDecay: config field \"decay_steps\" must be an integer. Received: "
      "18446744073709551615");
  EXPECT_EQ(CosineDecay::from_config({{"decay_steps", 1000.0}}).get_config()["decay_steps"], 1000);
}

}  // namespace
}  // namespace osprey::optim
