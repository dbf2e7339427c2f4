#include "osprey/autograd/ops/matmul.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

Fn matmul_fn() {
  return [](const Vars& v) { return matmul(v[0], v[1]); };
}

TEST(MatmulTest, MatrixGradientsOnTransposedViews) {
  // a = a0^T and b = b0^T are views with swapped strides.
  Variable a0 = input({3, 2}, 1), b0 = input({4, 3}, 2);
  Variable a(a0.value().transpose(0, 1), true), b(b0.value().transpose(0, 1), true);
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{a, b}));
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({2, 3}, 3, true), input({3, 4}, 4)}));
}

TEST(MatmulTest, BatchedGradientsWithBroadcastBatchDims) {
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({2, 1, 2, 3}, 5), input({3, 3, 2}, 6, true)}));
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({2, 2, 3}, 7, true), input({3, 4}, 8)}));
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({1, 3}, 9), input({2, 3, 1}, 10)}));
}

TEST(MatmulTest, VectorOperandGradients) {
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({3}, 11), input({3, 2}, 12)}));
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({2, 3}, 13), input({3}, 14, true)}));
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({3}, 15, true), input({3}, 16)}));
  OSPREY_EXPECT_GRADCHECK(matmul_fn(), (Vars{input({4}, 17), input({2, 4, 3}, 18)}));
}

TEST(MatmulTest, ForwardValuesAndVectorShapes) {
  const Variable a(f64({1, 2, 3, 4, 5, 6}, {2, 3})), b(f64({1, 0, -1, 2, 0.5, 1}, {3, 2}));
  EXPECT_EQ(values(matmul(a, b)), (std::vector<double>{0.5, 7, 2, 16}));
  EXPECT_EQ(matmul(Variable(f64({1, 2, 3}, {3})), b).shape(), (Shape{2}));
  EXPECT_EQ(matmul(Variable(f64({1, 2, 3}, {3})), Variable(f64({1, 2, 3}, {3}))).shape(), Shape{});
}

TEST(MatmulTest, LinearGradientsWithEachActivation) {
  for (Activation act : {Activation::none, Activation::relu, Activation::gelu_tanh,
                         Activation::gelu_erf, Activation::sigmoid, Activation::tanh}) {
    SCOPED_TRACE("activation " + std::to_string(static_cast<int>(act)));
    Variable x = input({2, 3, 4}, 20, true), w = input({4, 3}, 21), b = input({3}, 22);
    OSPREY_EXPECT_GRADCHECK([act](const Vars& v) { return linear(v[0], v[1], v[2], act); },
                            (Vars{x, w, b}));
  }
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return linear(v[0], v[1]); },
                          (Vars{input({5, 2}, 23), input({2, 3}, 24, true)}));
}

TEST(MatmulTest, LinearMatchesMatmulPlusBias) {
  const Variable x = input({3, 4}, 30), w = input({4, 2}, 31), b = input({2}, 32);
  expect_near_all(values(linear(x, w, b, Activation::relu)), values(relu(add(matmul(x, w), b))),
                  1e-12);
}

TEST(MatmulTest, InnerDimensionMismatchNamesShapes) {
  expect_error<ValueError>(
      [] {
        matmul(input({2, 3}, 1), input({4, 5}, 2));
      },
      {"matmul", "inner dimensions differ", "[2, 3]", "[4, 5]"});
  expect_error<ValueError>(
      [] {
        linear(input({2, 3}, 1), input({4, 5}, 2));
      },
      {"linear", "inner dimensions differ", "[2, 3]", "[4, 5]"});
  expect_error<ValueError>(
      [] {
        linear(input({2, 4}, 1), input({4, 5}, 2), input({4}, 3));
      },
      {"linear", "bias", "[5]"});
}

}  // namespace
}  // namespace osprey::autograd
