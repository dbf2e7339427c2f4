#include "osprey/autograd/ops/activation.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(ActivationTest, GradientsOnStridedInputs) {
  const Shape s{3, 4};
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return relu(v[0]); },
                          (Vars{away_from_zero(s, 1, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return gelu(v[0]); }, (Vars{input(s, 2, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return gelu(v[0], true); },
                          (Vars{input(s, 3, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return sigmoid(v[0]); }, (Vars{input(s, 4, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return tanh(v[0]); }, (Vars{input(s, 5)}));
}

// Values from PyTorch 1.13 (torch.nn.functional.gelu, float64).
TEST(ActivationTest, GeluMatchesPyTorch) {
  const Tensor xs = f64({-2.0, -0.5, 0.0, 0.7, 3.0}, {5});
  Variable x(xs, true);
  sum(gelu(x)).backward();
  expect_near_all(values(gelu(Variable(xs))),
                  {-0.0455002638964, -0.154268769363, 0, 0.530625443444, 2.99595030591}, 1e-11);
  expect_near_all(values(x.grad()),
                  {-0.0852318010782, 0.132504875344, 0.5, 0.976614101134, 1.0119456472}, 1e-11);
  Variable xt(xs, true);
  sum(gelu(xt, true)).backward();
  expect_near_all(values(gelu(Variable(xs), true)),
                  {-0.0454023059122, -0.154285990175, 0, 0.530570134705, 2.99636260792}, 1e-11);
  expect_near_all(values(xt.grad()),
                  {-0.0860992566236, 0.132630096465, 0.5, 0.976357218656, 1.01158416663}, 1e-11);
}

// PyTorch 1.13: torch.nn.functional.silu, float64.
TEST(ActivationTest, SiluMatchesPyTorch) {
  const Tensor xs = f64({-2.0, -0.5, 0.0, 0.7, 3.0}, {5});
  Variable x(xs, true);
  sum(silu(x)).backward();
  expect_near_all(
      values(silu(Variable(xs))),
      {-0.2384058440442351, -0.1887703343990727, 0.0, 0.46773144051771626, 2.8577223804672998},
      1e-12);
  expect_near_all(
      values(x.grad()),
      {-0.09078424878489547, 0.2600388126973482, 0.5, 0.8233867834733425, 1.0881041060151693},
      1e-12);
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return silu(v[0]); }, (Vars{input({3, 4}, 7, true)}));
}

TEST(ActivationTest, ReluGradientIsZeroAtZero) {
  Variable x(f64({-1.0, 0.0, 2.0}, {3}), true);
  sum(relu(x)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 1}));
}

TEST(ActivationTest, ActivationDispatchesAndNoneIsIdentity) {
  Variable x = input({2, 2}, 6);
  EXPECT_TRUE(activation(x, Activation::none).is_same(x));
  EXPECT_EQ(values(activation(x, Activation::tanh)), values(tanh(x)));
  EXPECT_EQ(values(activation(x, Activation::gelu_tanh)), values(gelu(x, true)));
}

TEST(ActivationTest, IntegerInputIsRejected) {
  expect_error<ValueError>([] { relu(Variable(arange(3))); },
                           {"relu", "floating-point", "int64[3]"});
}

}  // namespace
}  // namespace osprey::autograd
