#include "osprey/autograd/ops/conv.h"

#include <gtest/gtest.h>

#include <vector>

#include "osprey/autograd/ops/activation.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

struct ConvCase {
  const char* name;
  Shape x, w;
  Conv2dOptions options;
};

TEST(ConvTest, GradientsAcrossGeometries) {
  const std::vector<ConvCase> cases{
      {"valid NHWC", {2, 4, 4, 2}, {3, 3, 2, 3}, {}},
      {"same stride 2 NHWC", {1, 5, 5, 2}, {3, 3, 2, 2}, {.strides = {2, 2}, .padding = "same"}},
      {"explicit pads NCHW",
       {1, 2, 4, 3},
       {2, 2, 2, 3},
       {.padding = "explicit", .pads = {1, 0, 0, 1}, .data_format = "NCHW"}},
      {"dilation 2", {1, 5, 5, 1}, {2, 2, 1, 2}, {.dilation = {2, 2}}},
      {"groups 2 NCHW",
       {1, 4, 3, 3},
       {2, 2, 2, 4},
       {.padding = "same", .groups = 2, .data_format = "NCHW"}},
  };
  uint64_t seed = 1;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape b{c.w[3]};
    Variable x = input(c.x, seed++, true), w = input(c.w, seed++), bias = input(b, seed++);
    OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return conv2d(v[0], v[1], v[2], c.options); },
                            (Vars{x, w, bias}));
  }
}

TEST(ConvTest, GradientWithoutBiasAndBiasOnly) {
  Variable x = input({1, 3, 3, 2}, 40), w = input({2, 2, 2, 2}, 41), b = input({2}, 42);
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return conv2d(v[0], v[1]); }, (Vars{x, w}));
  Variable xc(x.value()), wc(w.value());  // constants: only the bias wants a gradient
  OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return conv2d(xc, wc, v[0]); }, (Vars{b}));
}

TEST(ConvTest, AFusedActivationEqualsTheSeparateOneAndItsGradientChecks) {
  // float64 (the reference kernels); relu's kink is avoided by the random values almost surely.
  Variable x = input({2, 5, 5, 3}, 50, true), w = input({3, 3, 3, 4}, 51), b = input({4}, 52);
  for (const Activation a : {Activation::relu, Activation::sigmoid, Activation::tanh}) {
    Conv2dParams p = resolve_conv2d(x.shape(), w.shape(), {.padding = "same"});
    p.activation = a;
    const Variable fused = conv2d(x, w, b, p);
    const Variable separate = activation(conv2d(x, w, b, Conv2dOptions{.padding = "same"}), a);
    const std::vector<double> f = fused.value().to_vector<double>(),
                              s = separate.value().to_vector<double>();
    ASSERT_EQ(f.size(), s.size());
    for (size_t i = 0; i < f.size(); ++i)
      ASSERT_NEAR(f[i], s[i], 1e-12) << static_cast<int>(a) << " at " << i;
    OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return conv2d(v[0], v[1], v[2], p); },
                            (Vars{x, w, b}));
  }
  Conv2dParams gelu = resolve_conv2d(x.shape(), w.shape(), {});
  gelu.activation = Activation::gelu_tanh;
  expect_error<ValueError>([&] { conv2d(x, w, b, gelu); },
                           {"conv2d: a fused activation must be relu, sigmoid or tanh"});
}

// Values from PyTorch 1.13 (torch.nn.functional.conv2d, float64, NCHW, weight [O, I, kh, kw]),
// with x = arange(32) / 7 - 2 as [1, 2, 4, 4] and w = arange(36) / 11 - 1.5 as [2, 2, 3, 3].
TEST(ConvTest, ForwardMatchesPyTorch) {
  const Tensor x = osprey::add(osprey::mul(arange(0, 32, 1, {DType::float64}), 1.0 / 7.0), -2.0)
                       .reshape({1, 2, 4, 4});
  const Tensor w_oihw =
      osprey::add(osprey::mul(arange(0, 36, 1, {DType::float64}), 1.0 / 11.0), -1.5)
          .reshape({2, 2, 3, 3});
  const Variable w(w_oihw.permute({2, 3, 1, 0}));  // -> [kh, kw, I, O]
  const Variable b(f64({0.25, -0.5}, {2}));
  const Variable y = conv2d(Variable(x), w, b, {.padding = "same", .data_format = "NCHW"});
  expect_near_all(values(y),
                  {6.50974025974,  9.47077922078,   8.45779220779,  5.41883116883,   8.89935064935,
                   12.5616883117,  10.6915584416,   6.48376623377,  4.22402597403,   5.08116883117,
                   3.21103896104,  1.18506493506,   0.12012987013,  -0.970779220779, -2.4512987013,
                   -2.42532467532, -0.785714285714, 0.305194805195, 2.0974025974,    1.86363636364,
                   3.94155844156,  7.6038961039,    9.94155844156,  7.13636363636,   10.487012987,
                   16.9545454545,  19.2922077922,   13.0584415584,  7.78571428571,   12.3051948052,
                   13.6298701299,  8.98051948052},
                  1e-9);
  const Variable y2 = conv2d(Variable(x), w, {.strides = {2, 2}, .data_format = "NCHW"});
  EXPECT_EQ(y2.shape(), (Shape{1, 2, 1, 1}));
  expect_near_all(values(y2), {12.3116883117, 8.1038961039}, 1e-9);
  // The same in NHWC.
  const Variable y3 = conv2d(Variable(x.permute({0, 2, 3, 1})), w, b, {.padding = "same"});
  expect_near_all(values(y3), values(Variable(y.value().permute({0, 2, 3, 1}).contiguous())),
                  1e-12);
}

TEST(ConvTest, ChannelMismatchIsAnError) {
  expect_error<ValueError>(
      [] {
        conv2d(input({1, 4, 4, 3}, 1), input({3, 3, 2, 4}, 2));
      },
      {"conv2d", "input channels", "[1, 4, 4, 3]"});
  expect_error<ValueError>(
      [] {
        conv2d(input({1, 4, 4, 2}, 1), input({3, 3, 2, 4}, 2), {.padding = "full"});
      },
      {"conv2d", "padding", "'full'"});
}

}  // namespace
}  // namespace osprey::autograd
