#include "osprey/autograd/ops/reduction.h"

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(ReductionTest, GradientsOverAxisSetsWithAndWithoutKeepdims) {
  const std::vector<std::vector<int>> axis_sets{{}, {0}, {1}, {-1}, {0, 2}};
  uint64_t seed = 1;
  for (const auto& axes : axis_sets) {
    for (bool keep : {false, true}) {
      SCOPED_TRACE(fmt::format("axes [{}] keepdims {}", fmt::join(axes, ", "), keep));
      const Shape s{3, 1, 4};
      OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return sum(v[0], axes, keep); },
                              (Vars{input(s, seed++, true)}));
      OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return mean(v[0], axes, keep); },
                              (Vars{input(s, seed++)}));
      OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return max(v[0], axes, keep); },
                              (Vars{input(s, seed++, true)}));
      OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return min(v[0], axes, keep); },
                              (Vars{input(s, seed++)}));
    }
  }
}

TEST(ReductionTest, SumToGradient) {
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return sum_to(v[0], {3, 1});
      },
      (Vars{input({2, 3, 4}, 7, true)}));
}

TEST(ReductionTest, ForwardValues) {
  const Variable x(f64({1, 5, 3, 4, 2, 6}, {2, 3}));
  EXPECT_EQ(values(sum(x)), (std::vector<double>{21}));
  EXPECT_EQ(values(sum(x, {1})), (std::vector<double>{9, 12}));
  EXPECT_EQ(sum(x, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(values(mean(x, {0})), (std::vector<double>{2.5, 3.5, 4.5}));
  EXPECT_EQ(values(max(x, {1})), (std::vector<double>{5, 6}));
  EXPECT_EQ(values(min(x, {0})), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(values(argmax(x, 1)), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(argmin(x, 0)), (std::vector<double>{0, 1, 0}));
}

TEST(ReductionTest, MaxGradientIsSplitEvenlyAmongTies) {
  Variable x(f64({1, 3, 3, 2, 7, 0}, {2, 3}), true);
  sum(max(x, {1})).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0.5, 0.5, 0, 1, 0}));
  Variable y(f64({4, 4, 4, 4}, {4}), true);
  min(y).backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
}

TEST(ReductionTest, AxisOutOfRangeAndRepeatedAxesAreErrors) {
  expect_error<ValueError>([] { sum(input({2, 3}, 1), {2}); }, {"sum", "axis 2", "rank 2"});
  expect_error<ValueError>([] { mean(input({2, 3}, 1), {1, -1}); }, {"mean", "repeated"});
}

}  // namespace
}  // namespace osprey::autograd
