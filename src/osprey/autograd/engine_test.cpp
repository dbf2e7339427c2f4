// Tape semantics: accumulation, grad mode, detach, views, explicit gradients, graph freeing,
// hooks and long graphs.
#include <gtest/gtest.h>

#include <cmath>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using osprey::testing::expect_error;
using osprey::testing::expect_near_all;
using osprey::testing::f64;
using osprey::testing::values;

TEST(EngineTest, GradAccumulatesWhenAVariableIsUsedTwice) {
  Variable x(f64({1, -2, 3}, {3}), true);
  sum(mul(x, x)).backward();  // d/dx sum(x^2) = 2x
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, -4, 6}));
}

TEST(EngineTest, GradAccumulatesAcrossBackwardCallsUntilZeroGrad) {
  Variable x(f64({1, 2}, {2}), true);
  sum(mul(x, 3.0)).backward();
  sum(mul(x, 3.0)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6, 6}));
  x.zero_grad();
  sum(mul(x, 3.0)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 3}));
}

TEST(EngineTest, DiamondGraphSumsBothPaths) {
  // y = (2x) * exp(x): dy/dx = 2 exp(x) + 2x exp(x).
  Variable x(f64({0.5, -1.0}, {2}), true);
  Variable a = mul(x, 2.0);
  Variable b = exp(x);
  sum(mul(a, b)).backward();
  const std::vector<double> xs{0.5, -1.0};
  expect_near_all(values(x.grad()),
                  {2 * std::exp(xs[0]) * (1 + xs[0]), 2 * std::exp(xs[1]) * (1 + xs[1])}, 1e-12);
}

TEST(EngineTest, NoGradGuardRecordsNothing) {
  Variable x(f64({1, 2}, {2}), true);
  Variable y;
  {
    NoGradGuard no_grad;
    y = mul(exp(x), x);
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
  expect_error<ValueError>([&] { sum(y).backward(); }, {"does not require grad"});
}

TEST(EngineTest, DetachStopsGradients) {
  Variable x(f64({1, 2, 3}, {3}), true);
  sum(mul(x, x.detach())).backward();  // only the first factor is differentiated
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 3}));
}

TEST(EngineTest, BackwardFlowsThroughViews) {
  // x [2, 3] -> transpose [3, 2] -> slice rows 1.. [2, 2] -> reshape [4] -> * w
  Variable x(f64({1, 2, 3, 4, 5, 6}, {2, 3}), true);
  Variable view = slice(transpose(x, 0, 1), 0, 1, 3);
  EXPECT_TRUE(view.value().shares_storage(x.value()));
  Variable v = reshape(view, {4});  // not expressible as a view of x: a copy
  EXPECT_EQ(values(v), (std::vector<double>{2, 5, 3, 6}));
  sum(mul(v, Variable(f64({10, 20, 30, 40}, {4})))).backward();
  // x[0][1] -> 10, x[1][1] -> 20, x[0][2] -> 30, x[1][2] -> 40; column 0 was sliced away.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 10, 30, 0, 20, 40}));
}

TEST(EngineTest, BackwardWithAnExplicitGradient) {
  Variable x(f64({1, 2, 3, 4}, {2, 2}), true);
  Variable y = mul(x, 3.0);
  const Tensor g = f64({1, 0, -1, 2}, {2, 2});
  y.backward(g);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 0, -3, 6}));
  // The leaf's gradient never aliases the caller's tensor.
  Variable z(f64({1, 2}, {2}), true);
  const Tensor gz = f64({5, 6}, {2});
  add(z, 1.0).backward(gz);
  EXPECT_FALSE(z.grad().shares_storage(gz));
  EXPECT_EQ(values(z.grad()), (std::vector<double>{5, 6}));
}

TEST(EngineTest, ExplicitGradientIsCastToTheOutputDtype) {
  Variable x(from_vector<float>({1, 2}, {2}), true);
  mul(x, 2.0).backward(f64({1, 1}, {2}));
  EXPECT_EQ(x.grad().dtype(), DType::float32);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 2}));
}

TEST(EngineTest, BackwardOnANonScalarWithoutAGradientThrows) {
  Variable x(f64({1, 2, 3, 4, 5, 6}, {2, 3}), true);
  Variable y = mul(x, 2.0);
  try {
    y.backward();
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "backward: a gradient can be created implicitly only for a one-element (scalar) "
                 "output, but the output has shape [2, 3]; call backward(grad) with a gradient of "
                 "that shape");
  }
}

TEST(EngineTest, ExplicitGradientOfTheWrongShapeThrows) {
  Variable x(f64({1, 2}, {2}), true);
  expect_error<ValueError>(
      [&] {
        mul(x, 2.0).backward(f64({1, 2, 3}, {3}));
      },
      {"backward", "[3]", "[2]"});
}

TEST(EngineTest, SecondBackwardThroughAFreedGraphThrows) {
  Variable x(f64({1, 2}, {2}), true);
  Variable loss = sum(exp(x));
  loss.backward();
  expect_error<ValueError>([&] { loss.backward(); }, {"already freed", "retain_graph"});
}

TEST(EngineTest, RetainGraphAllowsASecondBackward) {
  Variable x(f64({1, 2}, {2}), true);
  Variable loss = sum(mul(x, x));
  loss.backward(/*retain_graph=*/true);
  loss.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{4, 8}));
}

TEST(EngineTest, BackwardFreesSavedTensors) {
  Variable x(f64({1, 2}, {2}), true);
  Variable w(f64({3, 4}, {2}));
  Variable loss = sum(mul(x, w));  // mul saves w's value for x's gradient
  const long before = w.value().storage().use_count();
  loss.backward();
  EXPECT_LT(w.value().storage().use_count(), before);
  EXPECT_TRUE(loss.grad_fn()->released());
}

TEST(EngineTest, BackwardOfALeafSeedsItsGradient) {
  Variable x(f64({2}, {1}), true);
  x.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1}));
}

TEST(EngineTest, RetainGradKeepsAnIntermediateGradient) {
  Variable x(f64({1, 2}, {2}), true);
  Variable h = mul(x, 3.0);
  h.retain_grad();
  sum(mul(h, h)).backward();
  EXPECT_EQ(values(h.grad()), (std::vector<double>{6, 12}));  // 2h
  EXPECT_EQ(values(x.grad()), (std::vector<double>{18, 36}));
}

TEST(EngineTest, GradReadyHookFiresOnceWithTheCompleteGradient) {
  Variable x(f64({1, 2}, {2}), true);
  int calls = 0;
  std::vector<double> seen;
  x.add_grad_ready_hook([&](const Variable& v) {
    ++calls;
    seen = values(v.grad());
  });
  Variable a = mul(x, 2.0), b = mul(x, x);
  sum(add(a, b)).backward();  // two contributions: 2 and 2x
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (std::vector<double>{4, 6}));
}

TEST(EngineTest, MixedDtypeInputsGetGradientsInTheirOwnDtype) {
  Variable a(from_vector<float>({1, 2}, {2}), true);
  Variable b(f64({3, 4}, {2}), true);
  Variable y = mul(a, b);
  EXPECT_EQ(y.dtype(), DType::float64);
  sum(y).backward();
  EXPECT_EQ(a.grad().dtype(), DType::float32);
  EXPECT_EQ(b.grad().dtype(), DType::float64);
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3, 4}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{1, 2}));
}

TEST(EngineTest, LeafGradientsAreContiguous) {
  Variable x(f64({1, 2, 3, 4, 5, 6}, {2, 3}), true);
  sum(x).backward();  // sum's gradient is a stride-0 broadcast view
  EXPECT_TRUE(x.grad().is_contiguous());
  EXPECT_EQ(values(x.grad()), (std::vector<double>(6, 1.0)));
}

TEST(EngineTest, LongChainsBackpropagateAndFreeWithoutRecursion) {
  // Deep enough to overflow the stack if traversal or destruction recursed per node.
  constexpr int kDepth = 200000;
  Variable x(f64({1.0}, {1}), true);
  {
    Variable h = x;
    for (int i = 0; i < kDepth; ++i) h = add(h, 1e-6);
    sum(h).backward(/*retain_graph=*/true);  // keep the graph: its destruction is tested too
  }
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1.0}));
}

}  // namespace
}  // namespace osprey::autograd
