#include "osprey/autograd/ops/dropout.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(DropoutTest, GradientWithAFixedSeed) {
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return dropout(v[0], 0.3, 7); },
                          (Vars{input({4, 5}, 1, true)}));
}

TEST(DropoutTest, SurvivorsAreScaledAndTheSeedFixesTheMask) {
  const Variable x(ones({1000}, {DType::float64}));
  const std::vector<double> y = values(dropout(x, 0.25, 42));
  int kept = 0;
  for (double v : y) {
    EXPECT_TRUE(v == 0.0 || std::abs(v - 1.0 / 0.75) < 1e-12) << v;
    kept += v != 0.0;
  }
  EXPECT_NEAR(kept, 750, 60);
  EXPECT_EQ(values(dropout(x, 0.25, 42)), y);
  EXPECT_NE(values(dropout(x, 0.25, 43)), y);
}

TEST(DropoutTest, BackwardUsesTheForwardMask) {
  Variable x(ones({64}, {DType::float64}), true);
  const Variable y = dropout(x, 0.5, 3);
  sum(y).backward();
  EXPECT_EQ(values(x.grad()), values(y));  // d y_i / d x_i = mask_i / (1 - rate) = y_i when x = 1
}

TEST(DropoutTest, InferenceAndRateZeroAreTheIdentity) {
  const Variable x = input({3}, 2);
  EXPECT_TRUE(dropout(x, 0.5, 1, /*training=*/false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, 1).is_same(x));
}

TEST(DropoutTest, RateOutsideTheRangeIsAnError) {
  expect_error<ValueError>([] { dropout(input({3}, 1), 1.0, 1); },
                           {"dropout", "rate", "[0, 1)", "1"});
  expect_error<ValueError>([] { dropout(input({3}, 1), -0.1, 1); }, {"dropout", "rate"});
}

}  // namespace
}  // namespace osprey::autograd
