#include "osprey/tensor/ops.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/tensor/factory.h"

namespace osprey {
namespace {

using osprey::testing::error_of;

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

TEST(OpsTest, BinaryOpsBroadcastLikeNumPy) {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor col = from_vector<float>({10, 20}, {2, 1});
  EXPECT_EQ(values(add(a, col)), (std::vector<double>{11, 12, 13, 24, 25, 26}));
  EXPECT_EQ(values(sub(a, from_vector<float>({1, 1, 1}))), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(values(mul(a.transpose(0, 1), col.transpose(0, 1))),
            (std::vector<double>{10, 80, 20, 100, 30, 120}));
  EXPECT_EQ(values(div(a, full({}, 2.0))), (std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3}));
  EXPECT_EQ(values(pow(a, 2.0)), (std::vector<double>{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(values(maximum(a, full({1}, 3.5))), (std::vector<double>{3.5, 3.5, 3.5, 4, 5, 6}));
}

TEST(OpsTest, TypePromotionFollowsPyTorch) {
  Tensor i = from_vector<int32_t>({1, 2, 3});
  Tensor f = from_vector<float>({0.5f, 0.5f, 0.5f});
  Tensor d = from_vector<double>({1, 1, 1});
  EXPECT_EQ(add(i, f).dtype(), DType::float32);
  EXPECT_EQ(add(f, d).dtype(), DType::float64);
  EXPECT_EQ(add(i, i).dtype(), DType::int32);
  EXPECT_EQ(div(i, i).dtype(), DType::float32);  // true division
  EXPECT_EQ(values(div(i, from_vector<int32_t>({2, 2, 2}))), (std::vector<double>{0.5, 1, 1.5}));
  EXPECT_EQ(exp(i).dtype(), DType::float32);
  EXPECT_EQ(lt(i, f).dtype(), DType::boolean);
  EXPECT_EQ(sum(i).dtype(), DType::int64);
  EXPECT_EQ(mean(i).dtype(), DType::float32);
}

TEST(OpsTest, UnaryOpsMatchHandValues) {
  Tensor x = from_vector<double>({-2, -0.5, 0, 0.5, 2});
  EXPECT_EQ(values(relu(x)), (std::vector<double>{0, 0, 0, 0.5, 2}));
  EXPECT_EQ(values(abs(x)), (std::vector<double>{2, 0.5, 0, 0.5, 2}));
  EXPECT_EQ(values(clamp(x, -1, 1)), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  EXPECT_EQ(values(sign(x)), (std::vector<double>{-1, -1, 0, 1, 1}));
  const auto s = values(sigmoid(x));
  const auto g = values(gelu(x));
  const auto gt = values(gelu(x, true));
  for (size_t k = 0; k < 5; ++k) {
    const double v = x.at({static_cast<int64_t>(k)});
    EXPECT_NEAR(s[k], 1 / (1 + std::exp(-v)), 1e-15);
    EXPECT_NEAR(g[k], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-15);
    EXPECT_NEAR(gt[k], 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))),
                1e-15);
  }
  // PyTorch 1.13: torch.nn.functional.gelu(torch.tensor([2.], dtype=torch.float64))
  // = 1.9544997361036416
  EXPECT_NEAR(g[4], 1.9544997361036416, 1e-15);
  EXPECT_TRUE(std::isnan(values(sqrt(from_vector<double>({-1})))[0]));
}

TEST(OpsTest, WhereSelectsWithBroadcasting) {
  Tensor c = from_vector<bool>({true, false, true});
  EXPECT_EQ(values(where(c, from_vector<float>({1, 2, 3}), full({}, -1.0))),
            (std::vector<double>{1, -1, 3}));
  EXPECT_NE(error_of<ValueError>([&] {
              where(from_vector<float>({1}), c, c);
            }).find("where: cond must be a bool tensor"),
            std::string::npos);
}

TEST(OpsTest, ReductionsOverAxesWithKeepdims) {
  Tensor x = arange(0.0, 24.0).reshape({2, 3, 4});
  EXPECT_EQ(sum(x).item(), 276.0);
  Tensor s = sum(x, {0, 2});
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_EQ(values(s), (std::vector<double>{60, 92, 124}));
  EXPECT_EQ(sum(x, {-1}, true).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(values(mean(x, {1})), (std::vector<double>{4, 5, 6, 7, 16, 17, 18, 19}));
  EXPECT_EQ(values(max(x, {2})), (std::vector<double>{3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(values(min(x.transpose(0, 2), {0})), (std::vector<double>{0, 12, 4, 16, 8, 20}));
  Tensor y = from_vector<float>({1, 5, 5, 2, 0, 0}, {2, 3});
  EXPECT_EQ(values(argmax(y, 1)), (std::vector<double>{1, 0}));  // ties: first index
  EXPECT_EQ(values(argmin(y, 1)), (std::vector<double>{0, 1}));
  EXPECT_EQ(argmax(y, 0, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(sum(zeros({0, 3}), {0}).to_vector<float>(), std::vector<float>(3, 0.0f));
}

TEST(OpsTest, ReductionErrorsNameTheProblem) {
  EXPECT_EQ(error_of<ValueError>([] {
              max(zeros({2, 0}), {1});
            }),
            "max: cannot reduce over axis 1 of size 0 (shape [2, 0]): the reduction is empty");
  EXPECT_EQ(error_of<ValueError>([] {
              sum(zeros({2, 3}), {2});
            }),
            "sum: axis 2 is out of range for a tensor of rank 2 (expected an axis in [-2, 1])");
  EXPECT_EQ(error_of<ValueError>([] {
              argmax(zeros({2, 0}), 1);
            }),
            "argmax: cannot reduce over axis 1 of size 0 (shape [2, 0]): the reduction is empty");
  EXPECT_EQ(error_of<ValueError>([] { sum(zeros({2, 3}), {1, -1}); }), "sum: axis -1 is repeated");
}

TEST(OpsTest, SumToUndoesBroadcasting) {
  Tensor g = ones({4, 2, 3});
  EXPECT_EQ(values(sum_to(g, {2, 1})), (std::vector<double>{12, 12}));
  EXPECT_EQ(sum_to(g, {3}).shape(), (Shape{3}));
  EXPECT_EQ(values(sum_to(g, {})), (std::vector<double>{24}));
}

TEST(OpsTest, MatmulBatchesAndBroadcasts) {
  Tensor a = arange(0.0, 12.0).reshape({2, 2, 3});
  Tensor b = arange(0.0, 6.0).reshape({3, 2});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values(c), (std::vector<double>{10, 13, 28, 40, 46, 67, 64, 94}));
  EXPECT_EQ(values(matmul(from_vector<float>({1, 2, 3}), b)), (std::vector<double>{16, 22}));
  EXPECT_EQ(values(matmul(b.transpose(0, 1), from_vector<float>({1, 1, 1}))),
            (std::vector<double>{6, 9}));
  EXPECT_EQ(error_of<ValueError>([] {
              matmul(zeros({128, 784}), zeros({512, 256}));
            }),
            "matmul: inner dimensions differ: [128, 784] x [512, 256]");
  EXPECT_EQ(error_of<ValueError>([] {
              matmul(zeros({2, 2, 3}), zeros({3, 3, 1}));
            }),
            "matmul: shapes [2] and [3] cannot be broadcast together (dimension 0: 2 vs 3)");
  EXPECT_NE(error_of<ValueError>([] {
              matmul(zeros({2}, {DType::int32}), zeros({2}));
            }).find("floating-point"),
            std::string::npos);
}

TEST(OpsTest, LinearFusesBiasAndActivation) {
  Tensor x = from_vector<float>({1, -2, 3, 4}, {2, 2});
  Tensor w = from_vector<float>({1, 0, -1, 0, 1, 1}, {2, 3});
  Tensor b = from_vector<float>({0, 0, -10});
  EXPECT_EQ(values(linear(x, w, &b)), (std::vector<double>{1, -2, -13, 3, 4, -9}));
  EXPECT_EQ(values(linear(x, w, &b, Activation::relu)), (std::vector<double>{1, 0, 0, 3, 4, 0}));
  Tensor bad = zeros({2});
  EXPECT_EQ(error_of<ValueError>([&] { linear(x, w, &bad); }),
            "linear: bias must have shape [3] to match kernel [2, 3]. Received: bias [2]");
}

TEST(OpsTest, ConcatStackSplitPad) {
  Tensor a = from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = from_vector<float>({5, 6}, {2, 1});
  EXPECT_EQ(values(concat({a, b}, 1)), (std::vector<double>{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(stack({a, a}, 1).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values(stack({a, a}, 1).select(1, 1)), values(a));
  auto parts = split(arange(0.0, 5.0), {2, 3});
  EXPECT_EQ(values(parts[1]), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(values(pad(b, {{1, 0}, {0, 1}}, -1)), (std::vector<double>{-1, -1, 5, -1, 6, -1}));
  EXPECT_EQ(error_of<ValueError>([&] {
              concat({a, b}, 0);
            }),
            "concat: shapes differ outside axis 0: tensor 0 is [2, 2], tensor 1 is [2, 1]");
  EXPECT_EQ(error_of<ValueError>([] {
              split(zeros({5}), {2, 2});
            }),
            "split: sizes add up to 4 but axis 0 of shape [5] has size 5");
}

TEST(OpsTest, ConvAndPoolOptionsResolveLikeKeras) {
  // "same" with stride 2 on 28x28, 3x3: output 14x14, padding 0 before and 1 after.
  Conv2dParams p =
      resolve_conv2d({1, 28, 28, 1}, {3, 3, 1, 32}, {.strides = {2, 2}, .padding = "same"});
  EXPECT_EQ(p.pad_top, 0);
  EXPECT_EQ(p.pad_bottom, 1);
  EXPECT_EQ(conv2d_output_shape({1, 28, 28, 1}, {3, 3, 1, 32}, p), (Shape{1, 14, 14, 32}));
  Conv2dParams q =
      resolve_conv2d({8, 3, 10, 10}, {3, 3, 1, 6},
                     {.padding = "valid", .dilation = {2, 2}, .groups = 3, .data_format = "NCHW"});
  EXPECT_EQ(conv2d_output_shape({8, 3, 10, 10}, {3, 3, 1, 6}, q), (Shape{8, 6, 6, 6}));
  EXPECT_EQ(error_of<ValueError>([] {
              resolve_conv2d({1, 5, 5, 4}, {3, 3, 3, 8}, {});
            }),
            "conv2d: the kernel expects 3 input channels per group (3 in all) but the input [1, 5, "
            "5, 4] has 4");
  EXPECT_EQ(error_of<ValueError>([] {
              resolve_conv2d({1, 5, 5, 4}, {3, 3, 4, 8}, {.padding = "full"});
            }),
            "conv2d: padding must be 'valid', 'same' or 'explicit'. Received: 'full'");
  EXPECT_EQ(error_of<ValueError>([] {
              resolve_conv2d({1, 2, 2, 1}, {3, 3, 1, 1}, {});
            }),
            "conv2d: the output would be empty: input [1, 2, 2, 1] with kernel [3, 3, 1, 1] "
            "(strides [1, 1], padding 'valid')");
  Pool2dParams pp = resolve_pool2d({2, 7, 7, 3}, {.padding = "same"}, "max_pool2d");
  EXPECT_EQ(pool2d_output_shape({2, 7, 7, 3}, pp), (Shape{2, 4, 4, 3}));
}

TEST(OpsTest, ConvolutionForwardOnAHandExample) {
  // 3x3 image, 2x2 kernel of ones, valid: each output is a 2x2 window sum.
  Tensor x = arange(1.0, 10.0).reshape({1, 3, 3, 1});
  Tensor w = ones({2, 2, 1, 1});
  Conv2dParams p = resolve_conv2d(x.shape(), w.shape(), {});
  EXPECT_EQ(values(conv2d(x, w, nullptr, p)), (std::vector<double>{12, 16, 24, 28}));
  Pool2dParams mp =
      resolve_pool2d(x.shape(), {.pool_size = {2, 2}, .strides = {1, 1}}, "max_pool2d");
  EXPECT_EQ(values(max_pool2d(x, mp)), (std::vector<double>{5, 6, 8, 9}));
  EXPECT_EQ(values(avg_pool2d(x, mp)), (std::vector<double>{3, 4, 6, 7}));
}

TEST(OpsTest, SoftmaxIsStableForLargeLogits) {
  Tensor x = from_vector<float>({1000, 1001, 1002});
  const auto s = values(softmax(x));
  EXPECT_NEAR(s[2], 0.66524096, 1e-6);
  const auto l = values(log_softmax(x));
  EXPECT_NEAR(l[0], -2.40760596, 1e-5);
}

TEST(OpsTest, DeviceMismatchIsAnError) {
  // Only cpu:0 exists unless OSPREY_CPU_DEVICES says otherwise.
  EXPECT_NE(error_of<ValueError>([] {
              Tensor::empty({2}, {DType::float32, Device::cpu(5)});
            }).find("cpu:5 does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace osprey
