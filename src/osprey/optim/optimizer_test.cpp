#include "osprey/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/autograd/ops.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/optim/optim.h"
#include "osprey/optim/quadratic_test.h"
#include "osprey/tensor/allocator.h"

namespace osprey::optim {
namespace {

using namespace testing;  // NOLINT

std::vector<std::unique_ptr<Optimizer>> every_optimizer() {
  std::vector<std::unique_ptr<Optimizer>> all;
  all.push_back(
      std::make_unique<SGD>(SGDOptions{.learning_rate = 0.05, .momentum = 0.9, .nesterov = true}));
  all.push_back(std::make_unique<Adam>(AdamOptions{.learning_rate = 0.05, .amsgrad = true}));
  all.push_back(
      std::make_unique<AdamW>(AdamWOptions{.learning_rate = 0.05, .weight_decay = 0.001}));
  all.push_back(std::make_unique<RMSprop>(
      RMSpropOptions{.learning_rate = 0.01, .momentum = 0.5, .centered = true, .clipnorm = 10.0}));
  return all;
}

TEST(OptimizerGetTest, NamesGiveKerasDefaults) {
  EXPECT_EQ(get("sgd")->class_name(), "SGD");
  EXPECT_DOUBLE_EQ(get("sgd")->learning_rate(), 0.01);
  EXPECT_EQ(get("adam")->class_name(), "Adam");
  EXPECT_DOUBLE_EQ(get("Adam")->learning_rate(), 0.001);
  EXPECT_EQ(get("adamw")->class_name(), "AdamW");
  EXPECT_DOUBLE_EQ(*get("adamw")->options().weight_decay, 0.004);
  EXPECT_EQ(get("RMSprop")->class_name(), "RMSprop");
  EXPECT_DOUBLE_EQ(get("rmsprop")->learning_rate(), 0.001);
}

TEST(OptimizerGetTest, AnUnknownNameIsAValueErrorListingTheValidNames) {
  expect_message<ValueError>(
      [] { get("adagrad_plus"); },
      "Unknown optimizer: \"adagrad_plus\". Valid names: sgd, adam, adamw, rmsprop");
}

TEST(OptimizerGetTest, SerializeAndDeserializeRoundTripEveryOptimizer) {
  for (const auto& opt : every_optimizer()) {
    const nlohmann::json j = serialize(*opt);
    EXPECT_EQ(j["class_name"], opt->class_name());
    const auto back = deserialize(j);
    EXPECT_EQ(back->class_name(), opt->class_name());
    EXPECT_EQ(back->get_config(), opt->get_config());
  }
}

TEST(OptimizerTest, BadSharedOptionsAreValueErrorsWithExactMessages) {
  expect_message<ValueError>([] { Adam({.learning_rate = -0.1}); },
                             "Adam: learning_rate must be >= 0. Received: learning_rate=-0.1");
  expect_message<ValueError>([] { SGD({.clipnorm = 1.0, .clipvalue = 0.5}); },
                             "SGD: only one of clipnorm, clipvalue and global_clipnorm can be set. "
                             "Received: clipnorm=1, clipvalue=0.5, global_clipnorm=None");
  expect_message<ValueError>([] { RMSprop({.clipnorm = 0.0}); },
                             "RMSprop: clipnorm must be > 0. Received: clipnorm=0");
  expect_message<ValueError>([] { Adam({.loss_scale_factor = -2.0}); },
                             "Adam: loss_scale_factor must be > 0. Received: loss_scale_factor=-2");
  expect_message<ValueError>([] { SGD().set_learning_rate(-1.0); },
                             "SGD: learning_rate must be >= 0. Received: learning_rate=-1");
  expect_message<ValueError>(
      [] {
        Adam::from_config({{"beta_3", 0.5}});
      },
      "Adam: argument(s) not recognized: beta_3");
  expect_message<NotImplementedError>(
      [] {
        Adam::from_config({{"use_ema", true}});
      },
      "Adam: config field \"use_ema\" is not supported yet. Received: true");
}

TEST(OptimizerTest, VariablesWithoutAGradientAreSkipped) {
  Quadratic q = make_quadratic();
  set_quadratic_grads(q);
  q.bias.zero_grad();  // drops the gradient
  Adam opt;
  opt.apply(q.variables());
  EXPECT_EQ(q.bias.value().to_vector<double>(), vec(golden::kBias0));
  EXPECT_NE(q.kernel.value().to_vector<double>(), vec(golden::kKernel0));
  EXPECT_FALSE(opt.slot("sequential/dense/bias", "momentum").defined());
  EXPECT_EQ(opt.iterations(), 1);
}

TEST(OptimizerTest, NoGradientAtAllIsAValueErrorAndAnEmptyListIsANoOp) {
  Quadratic q = make_quadratic();
  Adam opt;
  opt.apply({});
  EXPECT_EQ(opt.iterations(), 0);
  expect_message<ValueError>([&] { opt.apply(q.variables()); },
                             "Adam: no gradients provided for any variable (received 2 variables)");
}

TEST(OptimizerTest, BadVariablesAreValueErrorsAndNothingIsUpdated) {
  Quadratic q = make_quadratic();
  set_quadratic_grads(q);
  autograd::Variable unnamed(from_vector<double>({1.0, 2.0}), true);
  unnamed.set_grad(from_vector<double>({1.0, 1.0}));
  SGD opt;
  expect_message<ValueError>(
      [&] {
        opt.apply({q.kernel, unnamed});
      },
      "SGD: every variable needs a name (its path, e.g. \"sequential/dense/kernel\"): "
      "slots are keyed by it. Received an unnamed variable float64[2] on cpu:0");
  EXPECT_EQ(q.kernel.value().to_vector<double>(), vec(golden::kKernel0));
  expect_message<ValueError>(
      [&] {
        opt.apply({q.kernel, q.kernel});
      },
      "SGD: two variables passed to apply() share the name \"sequential/dense/kernel\"; "
      "slots are keyed by name, so names must be unique");
  EXPECT_EQ(opt.iterations(), 0);
  opt.apply(q.variables());  // a failed call leaves nothing behind
  EXPECT_EQ(opt.iterations(), 1);
}

TEST(OptimizerTest, SetLearningRateReplacesASchedule) {
  Adam opt({.learning_rate = ExponentialDecay(
                {.initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 0.5})});
  run_quadratic(opt, DType::float64, 2);
  EXPECT_DOUBLE_EQ(opt.learning_rate(), 0.025);
  opt.set_learning_rate(opt.learning_rate() * 0.1);
  EXPECT_FALSE(opt.learning_rate_option().is_schedule());
  EXPECT_DOUBLE_EQ(opt.learning_rate(), 0.0025);
  EXPECT_DOUBLE_EQ(opt.get_config()["learning_rate"].get<double>(), 0.0025);
}

// What a data-parallel strategy builds each replica's optimizer with: the same class and
// options, and none of the original's slots or steps.
TEST(OptimizerTest, AFreshCopyHasTheSameOptionsAndNoState) {
  std::vector<std::unique_ptr<Optimizer>> all = every_optimizer();
  all.push_back(std::make_unique<LossScaleOptimizer>(
      std::make_unique<SGD>(SGDOptions{.learning_rate = 0.05, .momentum = 0.5}),
      LossScaleOptions{.initial_scale = 64.0, .dynamic_growth_steps = 3}));
  for (const auto& opt : all) {
    run_quadratic(*opt, DType::float64, 2);
    const std::unique_ptr<Optimizer> copy = opt->fresh_copy();
    EXPECT_EQ(copy->class_name(), opt->class_name());
    EXPECT_EQ(copy->get_config(), opt->get_config()) << opt->class_name();
    EXPECT_EQ(copy->iterations(), 0) << opt->class_name();
    EXPECT_FALSE(copy->slot("sequential/dense/kernel", copy->slot_names()[0]).defined());
    // It steps as the original did from the start.
    const std::unique_ptr<Optimizer> twin = deserialize(serialize(*opt));
    EXPECT_EQ(run_quadratic(*copy), run_quadratic(*twin)) << opt->class_name();
  }
}

// The weight-decay exclusions are in no config (as in Keras): a copy through JSON loses them, a
// fresh copy keeps them, a wrapped optimizer's too.
TEST(OptimizerTest, AFreshCopyKeepsTheWeightDecayExclusions) {
  const auto make = [](bool exclude_bias) {
    auto o = std::make_unique<AdamW>(AdamWOptions{.learning_rate = 0.05, .weight_decay = 0.5});
    if (exclude_bias) o->exclude_from_weight_decay({"bias"});
    return o;
  };
  const std::vector<double> kept = run_quadratic(*make(true));
  EXPECT_NE(kept, run_quadratic(*make(false)));  // the exclusion changes the bias's steps
  const auto original = make(true);
  EXPECT_EQ(run_quadratic(*original->fresh_copy()), kept);
  EXPECT_NE(run_quadratic(*deserialize(serialize(*original))), kept);
  // The gradients scaled as the loss would be, so the wrapper's unscaling gives them back exactly.
  LossScaleOptimizer wrapped(make(false));
  wrapped.exclude_from_weight_decay({"bias"});
  EXPECT_EQ(run_quadratic(*wrapped.fresh_copy(), DType::float64, golden::kSteps, wrapped.scale()),
            kept);
}

TEST(OptimizerTest, ScaleLossMultipliesTheLossVariable) {
  Adam scaled({.loss_scale_factor = 8.0});
  autograd::Variable loss(from_vector<float>({1.5f}, Shape{}));
  EXPECT_EQ(scaled.scale_loss(loss).item(), 12.0);
  EXPECT_TRUE(Adam().scale_loss(loss).is_same(loss));
}

TEST(OptimizerTest, EveryOptimizerMinimizesAQuadratic) {
  for (const auto& opt : every_optimizer()) {
    autograd::Variable w(from_vector<float>({3.0f, -2.0f, 0.5f, 4.0f}), true, "w");
    const autograd::Variable target(from_vector<float>({1.0f, 1.0f, -1.0f, 0.0f}));
    double loss_value = 0.0;
    for (int step = 0; step < 800; ++step) {
      autograd::Variable loss = autograd::sum(autograd::square(autograd::sub(w, target)));
      loss_value = loss.item();
      loss.backward();
      opt->apply({w});
      w.zero_grad();
    }
    EXPECT_LT(loss_value, 1e-3) << opt->class_name();
  }
}

TEST(OptimizerTest, SteadyStateStepsAllocateNothing) {
  for (const auto& opt : every_optimizer()) {
    std::vector<autograd::Variable> vars;
    for (int i = 0; i < 3; ++i) {
      autograd::Variable v(random_normal({i == 0 ? 300 : 7, 400}, {.seed = uint64_t(i + 1)}), true,
                           "layer/w" + std::to_string(i));
      v.set_grad(random_normal(v.shape(), {.seed = uint64_t(i + 10)}));
      vars.push_back(v);
    }
    opt->apply(vars);  // the first step creates the slots
    const AllocatorStats before = Allocator::instance().stats();
    for (int step = 0; step < 5; ++step) opt->apply(vars);
    const AllocatorStats after = Allocator::instance().stats();
    EXPECT_EQ(after.system_allocations, before.system_allocations) << opt->class_name();
    EXPECT_EQ(after.allocations, before.allocations) << opt->class_name();
  }
}

TEST(OptimizerTest, ResultsDoNotDependOnTheThreadCount) {
  const int saved = num_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    Adam opt({.learning_rate = 0.01, .global_clipnorm = 5.0});
    autograd::Variable big(random_normal({1000, 300}, {.seed = 3}), true, "big");
    autograd::Variable small(random_normal({5}, {.seed = 4}), true, "small");
    big.set_grad(random_normal(big.shape(), {.seed = 5}));
    small.set_grad(random_normal(small.shape(), {.seed = 6}));
    for (int step = 0; step < 3; ++step) opt.apply({small, big});
    results.push_back(big.value().to_vector<float>());
    results.back().push_back(small.value().to_vector<float>()[4]);
  }
  set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
}

TEST(OptimizerTest, LargeVariablesSplitIntoPiecesMatchAnElementwiseReference) {
  // 300000 elements: several parallel pieces; Adam with clipnorm, checked against double math.
  const double clip = 50.0;
  Adam opt({.learning_rate = 0.01, .clipnorm = clip});
  autograd::Variable w(random_normal({300000}, {.seed = 7}), true, "w");
  const std::vector<float> w0 = w.value().to_vector<float>();
  const Tensor g = random_normal({300000}, {.seed = 8});
  w.set_grad(g);
  opt.apply({w});
  const std::vector<float> gv = g.to_vector<float>();
  double sq = 0.0;
  for (float x : gv) sq += double(x) * x;
  const double scale = clip / std::max(std::sqrt(sq), clip);
  const double alpha = 0.01 * std::sqrt(1.0 - 0.999) / (1.0 - 0.9);
  const std::vector<float> got = w.value().to_vector<float>();
  for (size_t i = 0; i < got.size(); i += 997) {
    const double gi = gv[i] * scale;
    const double want = w0[i] - alpha * (0.1 * gi) / (std::sqrt(0.001 * gi * gi) + 1e-7);
    ASSERT_NEAR(got[i], want, 1e-6) << i;
  }
}

TEST(OptimizerTest, Bfloat16WeightsKeepFloat32SlotsAndTrackFloat32Weights) {
  Adam opt16({.learning_rate = 0.01});
  Adam opt32({.learning_rate = 0.01});
  const std::vector<double> w16 = run_quadratic(opt16, DType::bfloat16);
  const std::vector<double> w32 = run_quadratic(opt32, DType::float32);
  EXPECT_EQ(opt16.slot("sequential/dense/kernel", "velocity").dtype(), DType::float32);
  expect_values_near(w16, w32, 2e-2);
}

}  // namespace
}  // namespace osprey::optim
