#include "osprey/autograd/variable.h"

#include <gtest/gtest.h>

#include <thread>

#include "osprey/autograd/ops.h"
#include "osprey/autograd/variable_impl.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using osprey::testing::expect_error;
using osprey::testing::f64;
using osprey::testing::values;

TEST(VariableTest, HoldsValueFlagsAndName) {
  Variable w(f64({1, 2, 3, 4, 5, 6}, {2, 3}), true, "dense/kernel");
  EXPECT_TRUE(w.defined());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(w.grad_fn(), nullptr);
  EXPECT_FALSE(w.has_grad());
  EXPECT_EQ(w.name(), "dense/kernel");
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(w.dtype(), DType::float64);
  EXPECT_EQ(w.describe(), "Variable('dense/kernel', float64[2, 3] on cpu:0, requires_grad)");
}

TEST(VariableTest, CopiesShareOneState) {
  Variable a(f64({1, 2}, {2}), true);
  Variable b = a;
  b.set_name("shared");
  EXPECT_EQ(a.name(), "shared");
  EXPECT_TRUE(a.is_same(b));
  sum(mul(b, 3.0)).backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3, 3}));
}

TEST(VariableTest, OpResultRecordsItsNode) {
  Variable a(f64({1, 2}, {2}), true);
  Variable c(f64({3, 4}, {2}));
  Variable y = mul(a, c);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_STREQ(y.grad_fn()->op(), "mul");
  // The constant input is not kept by the graph.
  ASSERT_EQ(y.grad_fn()->num_inputs(), 2u);
  EXPECT_TRUE(y.grad_fn()->input(0).is_same(a));
  EXPECT_FALSE(y.grad_fn()->input(1).defined());
  EXPECT_EQ(y.describe(), "Variable(float64[2] on cpu:0, requires_grad, grad_fn=mul)");
}

TEST(VariableTest, TheGraphDoesNotKeepAnIntermediateValueBackwardDoesNotNeed) {
  // add saves nothing, so once `h` is dropped its value is freed although the graph still runs
  // through it; the gradient is unchanged.
  Variable a(f64({1, 2}, {2}), true);
  Variable h = add(a, 1.0);
  const std::weak_ptr<detail::VariableImpl> h_impl = h.impl();
  const Tensor h_value = h.value();
  Variable y = add(h, 1.0);
  EXPECT_TRUE(y.grad_fn()->input(0).is_same(h));  // still held by the test
  h = Variable();
  EXPECT_TRUE(h_impl.expired());
  EXPECT_FALSE(y.grad_fn()->input(0).defined());
  EXPECT_EQ(h_value.storage().use_count(), 1);  // only this test's handle: the graph let go
  sum(mul(y, y)).backward();                    // d/da (a + 2)^2 = 2 (a + 2)
  EXPECT_EQ(values(a.grad()), (std::vector<double>{6, 8}));
}

TEST(VariableTest, SoftmaxAndSigmoidKeepTheirLogitsWhileTheirOutputLives) {
  Variable a(f64({1, 2}, {2}), true);
  Variable p = softmax(mul(a, 2.0), -1);
  Variable logits = p.grad_fn()->input(0);
  ASSERT_TRUE(logits.defined());
  EXPECT_STREQ(logits.grad_fn()->op(), "mul");
  EXPECT_EQ(values(logits.value()), (std::vector<double>{2, 4}));
  Variable s = sigmoid(mul(a, 3.0));
  EXPECT_EQ(values(s.grad_fn()->input(0).value()), (std::vector<double>{3, 6}));
  Variable e = exp(mul(a, 3.0));  // any other op keeps no intermediate input
  EXPECT_FALSE(e.grad_fn()->input(0).defined());
}

TEST(VariableTest, ConstantsRecordNothing) {
  Variable a(f64({1, 2}, {2}));
  Variable y = exp(a);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(VariableTest, OnlyFloatingTensorsCanRequireGrad) {
  expect_error<ValueError>([] { Variable(arange(4), true); },
                           {"Variable", "only floating-point", "int64[4]"});
  Variable i(arange(4));
  expect_error<ValueError>([&] { i.set_requires_grad(true); }, {"floating-point"});
}

TEST(VariableTest, UndefinedValueAndHandleAreErrors) {
  expect_error<ValueError>([] { Variable(Tensor(), true, "w"); }, {"undefined", "'w'"});
  Variable none;
  EXPECT_FALSE(none.defined());
  EXPECT_FALSE(none.requires_grad());
  expect_error<ValueError>([&] { (void)none.value(); }, {"Variable::value", "undefined"});
  expect_error<ValueError>([&] { exp(none); }, {"exp", "x is an undefined Variable"});
}

TEST(VariableTest, RequiresGradChangesOnlyOnLeaves) {
  Variable a(f64({1, 2}, {2}));
  a.set_requires_grad(true);
  Variable y = mul(a, 2.0);
  expect_error<ValueError>([&] { y.set_requires_grad(false); }, {"only leaves", "'mul'"});
}

TEST(VariableTest, DetachSharesStorageAndStopsTheGraph) {
  Variable a(f64({1, 2}, {2}), true);
  Variable y = mul(a, 2.0);
  Variable d = y.detach();
  EXPECT_TRUE(d.is_leaf());
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.value().shares_storage(y.value()));
}

TEST(VariableTest, ZeroGradDropsOrZerosInPlace) {
  Variable a(f64({1, 2}, {2}), true);
  sum(mul(a, a)).backward();
  ASSERT_TRUE(a.has_grad());
  const Tensor g = a.grad();
  a.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(a.grad().shares_storage(g));
  EXPECT_EQ(values(a.grad()), (std::vector<double>{0, 0}));
  a.zero_grad();
  EXPECT_FALSE(a.has_grad());
}

TEST(VariableTest, SetGradChecksTheShape) {
  Variable a(f64({1, 2}, {2}), true);
  expect_error<ValueError>([&] { a.set_grad(zeros({3}, {DType::float64})); },
                           {"set_grad", "[3]", "[2]"});
  a.set_grad(ones({2}, {DType::float64}));
  EXPECT_TRUE(a.has_grad());
}

TEST(VariableTest, SetValueOnlyOnLeaves) {
  Variable a(f64({1, 2}, {2}), true);
  a.set_value(f64({5, 6}, {2}));
  EXPECT_EQ(values(a), (std::vector<double>{5, 6}));
  Variable y = mul(a, 2.0);
  expect_error<ValueError>([&] { y.set_value(f64({1, 1}, {2})); }, {"only a leaf", "'mul'"});
}

TEST(GradModeTest, NoGradGuardNestsAndRestores) {
  EXPECT_TRUE(is_grad_enabled());
  {
    NoGradGuard g1;
    EXPECT_FALSE(is_grad_enabled());
    {
      EnableGradGuard g2;
      EXPECT_TRUE(is_grad_enabled());
    }
    EXPECT_FALSE(is_grad_enabled());
  }
  EXPECT_TRUE(is_grad_enabled());
}

TEST(GradModeTest, GradModeIsPerThread) {
  NoGradGuard off;
  bool other_thread_enabled = false;
  std::thread t([&] { other_thread_enabled = is_grad_enabled(); });
  t.join();
  EXPECT_TRUE(other_thread_enabled);
  EXPECT_FALSE(is_grad_enabled());
}

}  // namespace
}  // namespace osprey::autograd
