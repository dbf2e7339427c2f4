#include "osprey/optim/loss_scale_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "osprey/core/error.h"
#include "osprey/optim/adam.h"
#include "osprey/optim/factory.h"
#include "osprey/optim/sgd.h"
#include "osprey/tensor/factory.h"

namespace osprey::optim {
namespace {

using autograd::Variable;

std::unique_ptr<Optimizer> plain_sgd(double lr = 0.5) {
  return std::make_unique<SGD>(SGDOptions{.learning_rate = lr});
}

Variable weight(std::vector<double> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Variable(from_vector<double>(values, {n}), true, "sequential/dense/kernel");
}

void set_grad(Variable& v, std::vector<double> g) { v.set_grad(from_vector<double>(g, v.shape())); }

TEST(LossScaleOptimizerTest, StartsAtTwoToTheFifteenthAndScalesTheLoss) {
  LossScaleOptimizer opt(plain_sgd());
  EXPECT_DOUBLE_EQ(opt.scale(), 32768.0);
  EXPECT_EQ(opt.skipped_steps(), 0);
  EXPECT_DOUBLE_EQ(opt.scale_loss(0.25), 8192.0);
  const Variable loss(from_vector<double>({0.25}, {}), true);
  EXPECT_DOUBLE_EQ(opt.scale_loss(loss).value().item(), 8192.0);
}

TEST(LossScaleOptimizerTest, AFiniteStepUnscalesTheGradientsBeforeTheInnerUpdate) {
  LossScaleOptimizer opt(plain_sgd(0.5));
  Variable w = weight({1.0, -2.0});
  // The scaled gradients of true gradients {0.5, 4}: the update must use the true ones.
  set_grad(w, {0.5 * 32768.0, 4.0 * 32768.0});
  EXPECT_TRUE(opt.apply_if_finite({w}));
  const auto v = w.value().to_vector<double>();
  EXPECT_DOUBLE_EQ(v[0], 1.0 - 0.5 * 0.5);
  EXPECT_DOUBLE_EQ(v[1], -2.0 - 0.5 * 4.0);
  EXPECT_EQ(opt.iterations(), 1);
  EXPECT_EQ(opt.good_steps(), 1);
}

TEST(LossScaleOptimizerTest, InfOrNanGradientsSkipTheUpdateKeepWeightsAndHalveTheScale) {
  LossScaleOptimizer opt(plain_sgd());
  Variable a = weight({1.0, 2.0});
  Variable b(from_vector<float>({3.0f, 4.0f}, {2}), true, "sequential/dense/bias");
  set_grad(a, {1.0, 1.0});
  b.set_grad(from_vector<float>({std::numeric_limits<float>::infinity(), 0.0f}, {2}));
  EXPECT_FALSE(opt.apply_if_finite({a, b}));
  EXPECT_EQ(a.value().to_vector<double>(), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(b.value().to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_DOUBLE_EQ(opt.scale(), 16384.0);
  EXPECT_EQ(opt.skipped_steps(), 1);
  EXPECT_EQ(opt.iterations(), 0);  // the inner optimizer never ran

  b.set_grad(from_vector<float>({0.0f, std::numeric_limits<float>::quiet_NaN()}, {2}));
  EXPECT_FALSE(opt.apply_if_finite({a, b}));
  EXPECT_EQ(a.value().to_vector<double>(), (std::vector<double>{1.0, 2.0}));
  EXPECT_DOUBLE_EQ(opt.scale(), 8192.0);
  EXPECT_EQ(opt.skipped_steps(), 2);
}

TEST(LossScaleOptimizerTest, TheScaleScheduleFollowsGrowthStepsAndOverflowsByHand) {
  // Growth every 3 finite steps so the schedule is short enough to write out:
  // step:   1  2  3   4  5  6(inf)  7  8  9   10(nan)
  // scale:  8  8  16  16 16 8       8  8  16  8
  LossScaleOptimizer opt(plain_sgd(0.0), {.initial_scale = 8.0, .dynamic_growth_steps = 3});
  Variable w = weight({1.0});
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> grads = {1, 1, 1, 1, 1, inf, 1, 1, 1, nan};
  const std::vector<double> scales = {8, 8, 16, 16, 16, 8, 8, 8, 16, 8};
  const std::vector<int64_t> skipped = {0, 0, 0, 0, 0, 1, 1, 1, 1, 2};
  for (size_t i = 0; i < grads.size(); ++i) {
    set_grad(w, {grads[i]});
    opt.apply({w});
    EXPECT_DOUBLE_EQ(opt.scale(), scales[i]) << "after step " << i + 1;
    EXPECT_EQ(opt.skipped_steps(), skipped[i]) << "after step " << i + 1;
  }
  EXPECT_EQ(opt.iterations(), 8);
}

TEST(LossScaleOptimizerTest, DefaultGrowthDoublesAfterTwoThousandFiniteSteps) {
  LossScaleOptimizer opt(plain_sgd(0.0));
  Variable w = weight({1.0});
  for (int i = 0; i < 1999; ++i) {
    set_grad(w, {1.0});
    opt.apply({w});
  }
  EXPECT_DOUBLE_EQ(opt.scale(), 32768.0);
  set_grad(w, {1.0});
  opt.apply({w});
  EXPECT_DOUBLE_EQ(opt.scale(), 65536.0);
  EXPECT_EQ(opt.good_steps(), 0);
}

TEST(LossScaleOptimizerTest, UnscaleGradientsDividesInPlaceForCustomSteps) {
  LossScaleOptimizer opt(plain_sgd(), {.initial_scale = 4.0});
  Variable w = weight({0.0, 0.0});
  set_grad(w, {2.0, -6.0});
  EXPECT_TRUE(opt.unscale_gradients({w}));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{0.5, -1.5}));
  set_grad(w, {2.0, std::numeric_limits<double>::infinity()});
  EXPECT_FALSE(opt.unscale_gradients({w}));
  EXPECT_FALSE(LossScaleOptimizer::all_finite({w}));
}

TEST(LossScaleOptimizerTest, BadOptionsAreValueErrors) {
  EXPECT_THROW(LossScaleOptimizer(plain_sgd(), {.initial_scale = 0.0}), ValueError);
  EXPECT_THROW(LossScaleOptimizer(plain_sgd(), {.dynamic_growth_steps = 0}), ValueError);
  EXPECT_THROW(LossScaleOptimizer(nullptr), ValueError);
  EXPECT_THROW(LossScaleOptimizer(std::make_unique<SGD>(SGDOptions{.loss_scale_factor = 8.0})),
               ValueError);
}

TEST(LossScaleOptimizerTest, WorksThroughTheOptimizerInterface) {
  std::unique_ptr<Optimizer> opt =
      std::make_unique<LossScaleOptimizer>(plain_sgd(0.5), LossScaleOptions{.initial_scale = 8.0});
  Variable w = weight({1.0});
  EXPECT_DOUBLE_EQ(opt->scale_loss(3.0), 24.0);
  set_grad(w, {16.0});  // the gradient of the scaled loss: 2 once unscaled
  opt->apply({w});
  EXPECT_DOUBLE_EQ(w.value().item(), 1.0 - 0.5 * 2.0);
  EXPECT_EQ(opt->iterations(), 1);
  set_grad(w, {std::nan("")});
  opt->apply({w});  // skipped: no throw, weights kept, the inner step count unchanged
  EXPECT_DOUBLE_EQ(w.value().item(), 0.0);
  EXPECT_EQ(opt->iterations(), 1);
  EXPECT_EQ(dynamic_cast<LossScaleOptimizer&>(*opt).skipped_steps(), 1);
  opt->set_learning_rate(0.25);
  EXPECT_DOUBLE_EQ(dynamic_cast<LossScaleOptimizer&>(*opt).inner().learning_rate(), 0.25);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.25);
}

TEST(LossScaleOptimizerTest, ConfigRoundTripsThroughSerialize) {
  LossScaleOptimizer opt(std::make_unique<Adam>(AdamOptions{.learning_rate = 0.002}),
                         {.initial_scale = 1024.0, .dynamic_growth_steps = 50});
  const nlohmann::json j = serialize(opt);
  EXPECT_EQ(j["class_name"], "LossScaleOptimizer");
  EXPECT_EQ(j["config"]["inner_optimizer"]["class_name"], "Adam");
  EXPECT_DOUBLE_EQ(j["config"]["initial_scale"].get<double>(), 1024.0);
  EXPECT_EQ(j["config"]["dynamic_growth_steps"], 50);
  const std::unique_ptr<Optimizer> back = deserialize(j);
  auto& lso = dynamic_cast<LossScaleOptimizer&>(*back);
  EXPECT_DOUBLE_EQ(lso.scale(), 1024.0);
  EXPECT_EQ(lso.loss_scale_options().dynamic_growth_steps, 50);
  EXPECT_EQ(lso.inner().class_name(), "Adam");
  EXPECT_DOUBLE_EQ(lso.learning_rate(), 0.002);
  EXPECT_EQ(serialize(*back), j);
  try {
    LossScaleOptimizer::from_config({{"initial_scale", 2.0}});
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "LossScaleOptimizer: config field \"inner_optimizer\" is missing. Received: "
                 "{\"initial_scale\":2.0}");
  }
}

TEST(LossScaleOptimizerTest, StateKeepsTheScaleAndItsCountersForResume) {
  LossScaleOptimizer opt(std::make_unique<Adam>(AdamOptions{}), {.initial_scale = 64.0});
  Variable w = weight({1.0, 2.0});
  set_grad(w, {std::numeric_limits<double>::infinity(), 0.0});
  opt.apply({w});  // skipped, scale 32
  set_grad(w, {1.0, 1.0});
  opt.apply({w});  // one good step
  LossScaleOptimizer resumed(std::make_unique<Adam>(AdamOptions{}), {.initial_scale = 64.0});
  resumed.load_state(opt.state());
  EXPECT_DOUBLE_EQ(resumed.scale(), 32.0);
  EXPECT_EQ(resumed.good_steps(), 1);
  EXPECT_EQ(resumed.skipped_steps(), 1);
  EXPECT_EQ(resumed.iterations(), 1);
  EXPECT_EQ(resumed.slot("sequential/dense/kernel", "momentum").to_vector<double>(),
            opt.slot("sequential/dense/kernel", "momentum").to_vector<double>());
  EXPECT_THROW(resumed.load_state(SGD(SGDOptions{}).state()), ValueError);  // no loss_scale entry
}

TEST(LossScaleFactorTest, AFixedFactorScalesTheLossAndDividesTheGradients) {
  SGD opt({.learning_rate = 1.0, .loss_scale_factor = 10.0});
  EXPECT_DOUBLE_EQ(opt.scale_loss(0.5), 5.0);
  Variable w = weight({1.0});
  set_grad(w, {10.0 * 0.25});  // the gradient of the scaled loss
  opt.apply({w});
  EXPECT_DOUBLE_EQ(w.value().item(), 0.75);
}

}  // namespace
}  // namespace osprey::optim
