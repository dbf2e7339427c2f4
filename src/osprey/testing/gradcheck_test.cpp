#include "osprey/testing/gradcheck.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::testing {
namespace {

// y = x^3 recorded with a chosen derivative, to check that the harness tells right from wrong.
Variable cube_with_derivative(const Variable& x, double factor) {
  Tensor y = osprey::pow(x.value(), 3.0);
  return autograd::make_variable(
      y, "cube", {x}, [xv = x.value(), factor](const Tensor& g, const std::vector<bool>&) {
        return std::vector<Tensor>{osprey::mul(osprey::mul(g, osprey::square(xv)), factor)};
      });
}

TEST(GradcheckTest, AcceptsTheRightGradientAndRejectsAWrongOne) {
  const Variable x = grad_input({2, 3}, 1, /*strided=*/true);
  const GradcheckResult right =
      gradcheck([](const auto& v) { return cube_with_derivative(v[0], 3.0); }, {x});
  EXPECT_TRUE(right.ok) << right.message;
  EXPECT_LT(right.max_error, 1e-8);
  EXPECT_EQ(right.elements_checked, 6);
  const GradcheckResult wrong =
      gradcheck([](const auto& v) { return cube_with_derivative(v[0], 3.01); }, {x});
  EXPECT_FALSE(wrong.ok);
  EXPECT_GT(wrong.max_error, 1e-4);
  EXPECT_EQ(wrong.worst_input, 0);
  EXPECT_NE(wrong.message.find("input 0 [2, 3]"), std::string::npos) << wrong.message;
}

TEST(GradcheckTest, RestoresInputsAndSkipsConstants) {
  const Variable x = grad_input({3}, 2);
  const Variable c(randn({3}, 3));
  const std::vector<double> before = values(x);
  const GradcheckResult r =
      gradcheck([](const auto& v) { return autograd::mul(v[0], v[1]); }, {x, c});
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.elements_checked, 3);
  EXPECT_EQ(values(x), before);
}

TEST(GradcheckTest, NoncontiguousKeepsValuesInAStridedLayout) {
  const Tensor t = randn({2, 3, 1}, 4);
  const Tensor n = noncontiguous(t);
  EXPECT_FALSE(n.is_contiguous());
  EXPECT_EQ(n.shape(), t.shape());
  EXPECT_EQ(values(n), values(t));
  EXPECT_TRUE(noncontiguous(randn({1, 1}, 5)).is_contiguous());  // nothing to stride
}

TEST(GradcheckTest, RejectsFloat32AndOverlappingInputs) {
  const auto id = [](const auto& v) { return v[0]; };
  expect_error<ValueError>([&] { gradcheck(id, {Variable(ones({2}), true)}); },
                           {"gradcheck", "float64", "float32[2]"});
  const Variable expanded(randn({1, 3}, 6).expand({4, 3}), true);
  expect_error<ValueError>([&] { gradcheck(id, {expanded}); }, {"gradcheck", "overlapping"});
}

}  // namespace
}  // namespace osprey::testing
