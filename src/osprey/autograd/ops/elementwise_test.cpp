#include "osprey/autograd/ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

// Random broadcasting pairs: a of a random shape, b broadcastable to it (or the other way round),
// with either input strided.
template <class Op>
void check_binary_broadcasting(Op op, uint64_t seed, bool positive_a = false,
                               bool positive_b = false) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (int trial = 0; trial < 4; ++trial) {
    const Shape full = random_shape(rng, 1, 3);
    Shape sa = full, sb = broadcastable_to(rng, full);
    if (trial % 2 == 1) std::swap(sa, sb);
    const bool strided_a = trial == 2, strided_b = trial == 3;
    const uint64_t s = seed * 100 + static_cast<uint64_t>(trial);
    Variable a = positive_a ? positive_input(sa, s, strided_a) : input(sa, s, strided_a);
    Variable b = positive_b ? positive_input(sb, s + 50, strided_b) : input(sb, s + 50, strided_b);
    SCOPED_TRACE("a " + sa.to_string() + (strided_a ? " strided" : "") + ", b " + sb.to_string() +
                 (strided_b ? " strided" : ""));
    OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return op(v[0], v[1]); }, (Vars{a, b}));
  }
}

TEST(ElementwiseTest, AddSubMulDivGradientsWithBroadcasting) {
  check_binary_broadcasting([](const Variable& a, const Variable& b) { return add(a, b); }, 1);
  check_binary_broadcasting([](const Variable& a, const Variable& b) { return sub(a, b); }, 2);
  check_binary_broadcasting([](const Variable& a, const Variable& b) { return mul(a, b); }, 3);
  check_binary_broadcasting([](const Variable& a, const Variable& b) { return div(a, b); }, 4,
                            false, true);
}

TEST(ElementwiseTest, PowTensorTensorGradient) {
  check_binary_broadcasting([](const Variable& a, const Variable& b) { return pow(a, b); }, 5, true,
                            false);
}

TEST(ElementwiseTest, MaximumMinimumGradients) {
  check_binary_broadcasting([](const Variable& a, const Variable& b) { return maximum(a, b); }, 6);
  check_binary_broadcasting([](const Variable& a, const Variable& b) { return minimum(a, b); }, 7);
}

TEST(ElementwiseTest, MaximumTiesGoToTheFirstArgument) {
  Variable a(f64({1, 2, 3}, {3}), true), b(f64({1, 5, 0}, {3}), true);
  sum(maximum(a, b)).backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{0, 1, 0}));
}

TEST(ElementwiseTest, ScalarOperandGradients) {
  const Shape s{2, 3};
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return add(v[0], 2.5); }, (Vars{input(s, 10, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return sub(v[0], 2.5); }, (Vars{input(s, 11)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return rsub(2.5, v[0]); }, (Vars{input(s, 12)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return mul(v[0], -1.5); },
                          (Vars{input(s, 13, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return div(v[0], 4.0); }, (Vars{input(s, 14)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return pow(v[0], 3.0); }, (Vars{input(s, 15, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return pow(v[0], -1.5); },
                          (Vars{positive_input(s, 16)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return pow(v[0], 0.0); }, (Vars{input(s, 17)}));
}

TEST(ElementwiseTest, UnaryGradients) {
  const Shape s{3, 1, 2};
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return neg(v[0]); }, (Vars{input(s, 20, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return exp(v[0]); }, (Vars{input(s, 21, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return log(v[0]); },
                          (Vars{positive_input(s, 22, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return sqrt(v[0]); },
                          (Vars{positive_input(s, 23, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return rsqrt(v[0]); }, (Vars{positive_input(s, 24)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return square(v[0]); }, (Vars{input(s, 25, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return abs(v[0]); },
                          (Vars{away_from_zero(s, 26, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return clamp(v[0], -0.5, 0.5); },
                          (Vars{input(Shape{4, 3}, 27, true)}));
}

TEST(ElementwiseTest, WhereGradientWithBroadcastCondition) {
  const Tensor cond = from_vector<bool>({true, false, true}, {3});
  Variable a = input({2, 3}, 30, true), b = input({1, 3}, 31);
  OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return where(cond, v[0], v[1]); }, (Vars{a, b}));
}

TEST(ElementwiseTest, OperatorsComposeTheSameOps) {
  Variable a = input({2, 2}, 40), b = input({2}, 41, true);
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return (v[0] - v[1]) * v[0] / (2.0 + v[1] * v[1]) + 1.0 - (-v[0]) * 3.0;
      },
      (Vars{a, b}));
}

TEST(ElementwiseTest, ForwardValuesMatchHandComputedResults) {
  const Variable a(f64({1, 2, 3, 4}, {2, 2})), b(f64({10, 20}, {2}));
  EXPECT_EQ(values(add(a, b)), (std::vector<double>{11, 22, 13, 24}));
  EXPECT_EQ(values(sub(a, b)), (std::vector<double>{-9, -18, -7, -16}));
  EXPECT_EQ(values(mul(a, b)), (std::vector<double>{10, 40, 30, 80}));
  EXPECT_EQ(values(div(b, a)), (std::vector<double>{10, 10, 10.0 / 3, 5}));
  EXPECT_EQ(values(pow(a, 2.0)), (std::vector<double>{1, 4, 9, 16}));
  EXPECT_EQ(values(clamp(a, 1.5, 3.5)), (std::vector<double>{1.5, 2, 3, 3.5}));
  EXPECT_EQ(values(rsub(1.0, a)), (std::vector<double>{0, -1, -2, -3}));
}

TEST(ElementwiseTest, PowGradientIsZeroWhereTheBaseIsZero) {
  Variable a(f64({0.0, 2.0}, {2}), true), b(f64({2.0, 3.0}, {2}), true);
  sum(pow(a, b)).backward();
  expect_near_all(values(a.grad()), {0.0, 12.0}, 1e-12);
  expect_near_all(values(b.grad()), {0.0, 8.0 * std::log(2.0)}, 1e-12);
}

TEST(ElementwiseTest, ClampPassesTheGradientInsideTheBoundsIncluded) {
  Variable x(f64({-1.0, -0.5, 0.0, 0.5, 1.0}, {5}), true);
  sum(clamp(x, -0.5, 0.5)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 1, 1, 0}));
}

TEST(ElementwiseTest, BroadcastFailureNamesTheOpAndShapes) {
  Variable a = input({2, 3}, 50), b = input({4}, 51);
  expect_error<ValueError>([&] { add(a, b); }, {"add", "[2, 3]", "[4]"});
  expect_error<ValueError>([&] { mul(a, Variable()); }, {"mul", "b is an undefined Variable"});
}

}  // namespace
}  // namespace osprey::autograd
