#include "osprey/nn/layers/dropout.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

std::vector<double> run(Dropout& d, const Variable& x) {
  return d(x, /*training=*/true).value().to_vector<double>();
}

TEST(DropoutTest, ZeroesAboutRateOfTheElementsAndScalesTheRest) {
  auto drop = layers::Dropout(0.3, {.seed = 11});
  const Variable x(ones({200, 500}));
  const std::vector<double> y = run(*drop, x);
  int64_t zeros_seen = 0;
  for (double v : y) {
    if (v == 0.0) {
      ++zeros_seen;
    } else {
      EXPECT_NEAR(v, 1.0 / 0.7, 1e-6);
    }
  }
  // 100000 Bernoulli(0.3) draws: the standard deviation of the fraction is 0.00145.
  EXPECT_NEAR(static_cast<double>(zeros_seen) / static_cast<double>(y.size()), 0.3, 0.01);
}

TEST(DropoutTest, IsTheIdentityInInference) {
  auto drop = layers::Dropout(0.5, {.dtype = "float64"});  // float64 inputs: no autocast
  const Variable x(test::wave({4, 5}, 1));
  EXPECT_TRUE(drop(x, /*training=*/false).is_same(x));
  EXPECT_TRUE(layers::Dropout(0.0, {.dtype = "float64"})(x, /*training=*/true).is_same(x));
}

TEST(DropoutTest, IsReproducibleGivenTheGlobalSeed) {
  const Variable x(ones({8, 64}));
  set_global_seed(42);
  auto a = layers::Dropout(0.5);
  const std::vector<double> a1 = run(*a, x), a2 = run(*a, x);
  EXPECT_NE(a1, a2);  // a fresh mask each call
  set_global_seed(42);
  auto b = layers::Dropout(0.5);
  EXPECT_EQ(run(*b, x), a1);
  EXPECT_EQ(run(*b, x), a2);
}

TEST(DropoutTest, AnOwnSeedGivesTheSameSequenceWhateverTheGlobalSeed) {
  const Variable x(ones({8, 64}));
  set_global_seed(1);
  auto a = layers::Dropout(0.5, {.seed = 7});
  const std::vector<double> a1 = run(*a, x), a2 = run(*a, x);
  EXPECT_NE(a1, a2);
  set_global_seed(2);
  auto b = layers::Dropout(0.5, {.seed = 7});
  EXPECT_EQ(run(*b, x), a1);
  EXPECT_EQ(run(*b, x), a2);
}

TEST(DropoutTest, GradientIsTheMask) {
  auto drop = layers::Dropout(0.25, {.seed = 3, .dtype = "float64"});
  Variable x(test::wave({6, 7}, 2), true);
  const Variable y = drop(x, true);
  autograd::sum(y).backward();
  const auto g = x.grad().to_vector<double>();
  const auto yv = y.value().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_DOUBLE_EQ(g[i], yv[i] == 0.0 ? 0.0 : 1.0 / 0.75) << i;
}

TEST(DropoutTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::Dropout(0.5, {.dtype = "float64"}); },
                                  Shape{3, 4},
                                  {.output_shape = {3, 4}, .params = 0, .deterministic = false});
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::Dropout(0.2, {.seed = 5}); }, Shape{2, 3, 4},
                                  {.output_shape = {2, 3, 4}, .params = 0, .deterministic = false});
}

TEST(DropoutTest, ConfigUsesKerasFieldNames) {
  const nlohmann::json c = layers::Dropout(0.4, {.seed = 9, .name = "drop"})->get_config();
  EXPECT_EQ(c["rate"], 0.4);
  EXPECT_EQ(c["seed"], 9);
  EXPECT_TRUE(c["noise_shape"].is_null());
  EXPECT_TRUE(layers::Dropout(0.4)->get_config()["seed"].is_null());
  auto back = std::dynamic_pointer_cast<Dropout>(Dropout::from_config(c));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->seed(), std::optional<uint64_t>(9));
}

TEST(DropoutTest, RejectsARateOutsideZeroToOne) {
  EXPECT_EQ(test::value_error([] { layers::Dropout(1.0); }),
            "Dropout: rate must be in [0, 1). Received: rate=1");
  EXPECT_EQ(test::value_error([] { layers::Dropout(-0.1); }),
            "Dropout: rate must be in [0, 1). Received: rate=-0.1");
}

}  // namespace
}  // namespace osprey::nn
