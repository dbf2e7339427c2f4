// Tests of the reference nn kernels (matmul, conv, pool, norm, softmax, cross-entropy, embedding):
// hand-computed values on tiny cases, then identities that pin down the rest — layouts agree,
// backward passes are the adjoints of forward, gradients match central finite differences.
// Everything runs in float64 so identities hold to 1e-10.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey {
namespace {

using reference::detail::to_doubles;

Tensor f64(const std::vector<double>& v, const Shape& s) { return from_vector<double>(v, s); }
Tensor randn(const Shape& s, uint64_t seed) {
  return random_normal(s, {.seed = seed, .dtype = DType::float64});
}
Tensor empty64(const Shape& s) { return Tensor::empty(s, {DType::float64}); }

double dot(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = to_doubles(a), y = to_doubles(b);
  EXPECT_EQ(x.size(), y.size());
  double s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  const std::vector<double> got = to_doubles(t);
  ASSERT_EQ(got.size(), want.size()) << t.describe();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}
void expect_same(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  ASSERT_EQ(a.shape(), b.shape());
  expect_values(a, to_doubles(b), tol);
}

// Central differences of loss() with respect to every element of t (contiguous float64), which
// is perturbed in place and restored.
std::vector<double> numeric_grad(Tensor& t, const std::function<double()>& loss) {
  const double h = 1e-5;
  double* p = t.data<double>();
  std::vector<double> g(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < g.size(); ++i) {
    const double x0 = p[i];
    p[i] = x0 + h;
    const double up = loss();
    p[i] = x0 - h;
    const double down = loss();
    p[i] = x0;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// The message of the ValueError fn throws ("" when it throws none).
std::string value_error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------------------------- matmul

TEST(ReferenceMatmulTest, MultipliesTwoByTwoByHand) {
  Tensor out = empty64({2, 2});
  reference::matmul(f64({1, 2, 3, 4}, {2, 2}), f64({5, 6, 7, 8}, {2, 2}), nullptr, out, {});
  expect_values(out, {19, 22, 43, 50});
}

TEST(ReferenceMatmulTest, AddsBiasThenAppliesActivation) {
  Tensor out = empty64({2, 2});
  const Tensor bias = f64({1, -100}, {2});
  reference::matmul(f64({1, 2, 3, 4}, {2, 2}), f64({5, 6, 7, 8}, {2, 2}), &bias, out,
                    {.activation = Activation::relu});
  expect_values(out, {20, 0, 44, 0});
  const std::vector<std::pair<Activation, double>> cases = {
      {Activation::none, 1.0},
      {Activation::gelu_erf, 0.8413447460685429},
      {Activation::gelu_tanh, 0.8411919906082768},
      {Activation::sigmoid, 0.7310585786300049},
      {Activation::tanh, 0.7615941559557649}};
  for (const auto& [act, want] : cases) {
    Tensor one = empty64({1, 1});
    reference::matmul(f64({1}, {1, 1}), f64({1}, {1, 1}), nullptr, one, {.activation = act});
    expect_values(one, {want}, 1e-15);
  }
}

TEST(ReferenceMatmulTest, AccumulateAddsToTheOutput) {
  Tensor out = f64({1, 1, 1, 1}, {2, 2});
  reference::matmul(f64({1, 2, 3, 4}, {2, 2}), f64({5, 6, 7, 8}, {2, 2}), nullptr, out,
                    {.accumulate = true});
  expect_values(out, {20, 23, 44, 51});
}

TEST(ReferenceMatmulTest, TransposedViewsGiveTheProductOfTheirValues) {
  // a: [2, 3, 4] as a transposed view of [2, 4, 3]; b: a stride-0 batch expansion of [4, 5].
  const Tensor at = randn({2, 4, 3}, 1);
  const Tensor a = at.transpose(1, 2);
  const Tensor b = randn({1, 4, 5}, 2).expand({2, 4, 5});
  Tensor out = empty64({2, 3, 5}), want = empty64({2, 3, 5});
  reference::matmul(a, b, nullptr, out, {});
  reference::matmul(a.contiguous(), b.contiguous(), nullptr, want, {});
  expect_same(out, want);
  EXPECT_NEAR(
      out.at({1, 2, 3}),
      [&] {
        double s = 0.0;
        for (int64_t k = 0; k < 4; ++k) s += at.at({1, k, 2}) * b.at({1, k, 3});
        return s;
      }(),
      1e-12);
}

TEST(ReferenceMatmulTest, BackwardProductsAreTheAdjoint) {
  // <a @ b, dy> == <a, dy @ b^T> == <b, a^T @ dy>
  const Tensor a = randn({3, 4, 6}, 3), b = randn({3, 6, 5}, 4), dy = randn({3, 4, 5}, 5);
  Tensor y = empty64({3, 4, 5}), da = empty64({3, 4, 6}), db = empty64({3, 6, 5});
  reference::matmul(a, b, nullptr, y, {});
  reference::matmul(dy, b.transpose(1, 2), nullptr, da, {});
  reference::matmul(a.transpose(1, 2), dy, nullptr, db, {});
  EXPECT_NEAR(dot(y, dy), dot(a, da), 1e-10);
  EXPECT_NEAR(dot(y, dy), dot(b, db), 1e-10);
}

TEST(ReferenceMatmulTest, RoundsIntoTheOutputDtype) {
  const Tensor a = randn({3, 7}, 6).to(DType::float32), b = randn({7, 2}, 7).to(DType::float32);
  Tensor out = Tensor::empty({3, 2}, {DType::float32}), want = empty64({3, 2});
  reference::matmul(a, b, nullptr, out, {});
  reference::matmul(a, b, nullptr, want, {});
  EXPECT_EQ(out.dtype(), DType::float32);
  expect_same(out, want, 1e-5);
}

// ------------------------------------------------------------------------------------ conv

// The output shape of a convolution, in p's layout.
Shape conv_out(const Shape& x, const Shape& w, const Conv2dParams& p) {
  const int64_t h = p.channels_last ? x[1] : x[2], wd = p.channels_last ? x[2] : x[3];
  const int64_t oh =
      (h + p.pad_top + p.pad_bottom - p.dilation_h * (w[0] - 1) - 1) / p.stride_h + 1;
  const int64_t ow =
      (wd + p.pad_left + p.pad_right - p.dilation_w * (w[1] - 1) - 1) / p.stride_w + 1;
  return p.channels_last ? Shape{x[0], oh, ow, w[3]} : Shape{x[0], w[3], oh, ow};
}
Tensor conv(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dParams& p) {
  Tensor y = empty64(conv_out(x.shape(), w.shape(), p));
  reference::conv2d_forward(x, w, bias, y, p);
  return y;
}

Tensor one_to_nine() { return f64({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}); }

TEST(ReferenceConvTest, ValidConvolutionOfThreeByThreeByHand) {
  expect_values(conv(one_to_nine(), f64({1, 2, 3, 4}, {2, 2, 1, 1}), nullptr, {}),
                {37, 47, 67, 77});
}

TEST(ReferenceConvTest, StridedPaddedConvolutionWithBiasByHand) {
  // A 3x3 box filter with stride 2 over the zero-padded 5x5 image: each output sums a 2x2 corner.
  const Tensor bias = f64({1}, {1});
  const Conv2dParams p{
      .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  expect_values(conv(one_to_nine(), f64(std::vector<double>(9, 1.0), {3, 3, 1, 1}), &bias, p),
                {13, 17, 25, 29});
}

TEST(ReferenceConvTest, DilatedConvolutionReadsTheCornersByHand) {
  const Conv2dParams p{.dilation_h = 2, .dilation_w = 2};
  expect_values(conv(one_to_nine(), f64({1, 2, 3, 4}, {2, 2, 1, 1}), nullptr, p), {64});
}

// A grouped, strided, asymmetrically padded, dilated case in NHWC.
const Conv2dParams kOddConv{.stride_h = 2,
                            .stride_w = 1,
                            .pad_top = 1,
                            .pad_bottom = 0,
                            .pad_left = 0,
                            .pad_right = 2,
                            .dilation_h = 1,
                            .dilation_w = 2,
                            .groups = 2};

TEST(ReferenceConvTest, NhwcAndNchwAgreeOnPermutedData) {
  const Tensor x = randn({2, 5, 6, 4}, 10), w = randn({3, 2, 2, 6}, 11), b = randn({6}, 12);
  const Tensor dy = randn(conv_out(x.shape(), w.shape(), kOddConv), 13);
  Conv2dParams nchw = kOddConv;
  nchw.channels_last = false;
  // Strided NCHW views of the NHWC data: the kernels must honour any strides.
  expect_same(conv(x.permute({0, 3, 1, 2}), w, &b, nchw),
              conv(x, w, &b, kOddConv).permute({0, 3, 1, 2}));

  Tensor dx = empty64(x.shape()), dx_nchw = empty64({2, 4, 5, 6});
  reference::conv2d_backward_data(dy, w, dx, kOddConv);
  reference::conv2d_backward_data(dy.permute({0, 3, 1, 2}), w, dx_nchw, nchw);
  expect_same(dx_nchw, dx.permute({0, 3, 1, 2}));

  Tensor dw = empty64(w.shape()), dw_nchw = empty64(w.shape());
  Tensor db = empty64({6}), db_nchw = empty64({6});
  reference::conv2d_backward_weights(dy, x, dw, &db, kOddConv);
  reference::conv2d_backward_weights(dy.permute({0, 3, 1, 2}), x.permute({0, 3, 1, 2}), dw_nchw,
                                     &db_nchw, nchw);
  expect_same(dw_nchw, dw, 1e-10);
  expect_same(db_nchw, db, 1e-10);
}

TEST(ReferenceConvTest, GroupedConvolutionEqualsSeparateConvolutions) {
  const Tensor x = randn({2, 5, 6, 4}, 20), w = randn({3, 2, 2, 6}, 21);
  Conv2dParams single = kOddConv;
  single.groups = 1;
  const Tensor y = conv(x, w, nullptr, kOddConv);
  for (int64_t g = 0; g < 2; ++g) {
    const Tensor part = conv(x.narrow(3, 2 * g, 2), w.narrow(3, 3 * g, 3), nullptr, single);
    expect_same(y.narrow(3, 3 * g, 3).contiguous(), part, 1e-12);
  }
}

TEST(ReferenceConvTest, BackwardPassesAreTheAdjointOfForward) {
  for (const bool channels_last : {true, false}) {
    Conv2dParams p = kOddConv;
    p.channels_last = channels_last;
    const Tensor x = randn(channels_last ? Shape{2, 5, 6, 4} : Shape{2, 4, 5, 6}, 30);
    const Tensor w = randn({3, 2, 2, 6}, 31);
    const Tensor dy = randn(conv_out(x.shape(), w.shape(), p), 32);
    Tensor dx = empty64(x.shape()), dw = empty64(w.shape()), db = empty64({6});
    reference::conv2d_backward_data(dy, w, dx, p);
    reference::conv2d_backward_weights(dy, x, dw, &db, p);
    const double forward = dot(conv(x, w, nullptr, p), dy);
    EXPECT_NEAR(forward, dot(x, dx), 1e-10) << "channels_last=" << channels_last;
    EXPECT_NEAR(forward, dot(w, dw), 1e-10) << "channels_last=" << channels_last;
    // dbias is the adjoint of adding the bias: <conv(x, 0, b), dy> == <b, dbias>.
    const Tensor b = randn({6}, 33);
    EXPECT_NEAR(dot(conv(x, f64(std::vector<double>(w.numel(), 0.0), w.shape()), &b, p), dy),
                dot(b, db), 1e-10);
  }
}

// ------------------------------------------------------------------------------------ pool

TEST(ReferencePoolTest, MaxPoolTwoByTwoByHandWithWorkspace) {
  const Tensor x = f64({1, 5, 2, 0, 3, 4, 8, 8, 9, 1, 0, 2, 1, 1, 3, 7}, {1, 4, 4, 1});
  Tensor y = empty64({1, 2, 2, 1}), ws;
  reference::max_pool2d_forward(x, y, &ws, {});
  expect_values(y, {5, 8, 9, 7});
  ASSERT_EQ(ws.dtype(), DType::int64);
  EXPECT_EQ(ws.shape(), y.shape());
  expect_values(ws, {1, 6, 8, 15});  // first max wins: 8 at index 6 before 8 at index 7
  Tensor dx = empty64(x.shape());
  reference::max_pool2d_backward(f64({1, 2, 3, 4}, {1, 2, 2, 1}), x, ws, dx, {});
  expect_values(dx, {0, 1, 0, 0, 0, 0, 2, 0, 3, 0, 0, 0, 0, 0, 0, 4});
}

TEST(ReferencePoolTest, MaxPoolPaddingNeverWins) {
  // All inputs are negative, so a padded zero would win if it counted; equal values tie.
  const Pool2dParams p{
      .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  Tensor y = empty64({1, 3, 3, 1}), ws;
  reference::max_pool2d_forward(f64({-1, -1, -1, -1}, {1, 2, 2, 1}), y, &ws, p);
  expect_values(y, std::vector<double>(9, -1.0));
  expect_values(ws, {0, 0, 1, 0, 0, 1, 2, 2, 3});
}

TEST(ReferencePoolTest, AvgPoolDividesByUnpaddedCountByHand) {
  const Pool2dParams p{
      .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  Tensor y = empty64({1, 3, 3, 1});
  reference::avg_pool2d_forward(f64({1, 2, 3, 4}, {1, 2, 2, 1}), y, p);
  expect_values(y, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
}

TEST(ReferencePoolTest, BackwardPassesAreTheAdjointOfForward) {
  // Overlapping windows, padding and both layouts. Max pooling is linear once its argmax is
  // fixed, so the identity holds for it too.
  for (const bool channels_last : {true, false}) {
    const Pool2dParams p{.kernel_h = 3,
                         .kernel_w = 2,
                         .stride_h = 2,
                         .stride_w = 1,
                         .pad_top = 1,
                         .pad_bottom = 1,
                         .pad_left = 0,
                         .pad_right = 1,
                         .channels_last = channels_last};
    const Shape xs = channels_last ? Shape{2, 5, 4, 3} : Shape{2, 3, 5, 4};
    const Shape ys = channels_last ? Shape{2, 3, 4, 3} : Shape{2, 3, 3, 4};
    const Tensor x = randn(xs, 40), dy = randn(ys, 41);
    Tensor y = empty64(ys), dx = empty64(xs), ws;
    reference::avg_pool2d_forward(x, y, p);
    reference::avg_pool2d_backward(dy, dx, p);
    EXPECT_NEAR(dot(y, dy), dot(x, dx), 1e-10) << "avg, channels_last=" << channels_last;
    reference::max_pool2d_forward(x, y, &ws, p);
    reference::max_pool2d_backward(dy, x, ws, dx, p);
    EXPECT_NEAR(dot(y, dy), dot(x, dx), 1e-10) << "max, channels_last=" << channels_last;
    Tensor dx_recomputed = empty64(xs);  // without a workspace the argmax is recomputed
    reference::max_pool2d_backward(dy, x, Tensor(), dx_recomputed, p);
    expect_same(dx_recomputed, dx);
  }
}

TEST(ReferencePoolTest, NhwcAndNchwAgreeOnPermutedData) {
  const Pool2dParams nhwc{.kernel_h = 3,
                          .kernel_w = 3,
                          .stride_h = 2,
                          .stride_w = 2,
                          .pad_top = 1,
                          .pad_bottom = 1,
                          .pad_left = 1,
                          .pad_right = 1};
  Pool2dParams nchw = nhwc;
  nchw.channels_last = false;
  const Tensor x = randn({2, 5, 5, 3}, 50);
  Tensor y = empty64({2, 3, 3, 3}), y_nchw = empty64({2, 3, 3, 3});
  reference::avg_pool2d_forward(x, y, nhwc);
  reference::avg_pool2d_forward(x.permute({0, 3, 1, 2}), y_nchw, nchw);
  expect_same(y_nchw, y.permute({0, 3, 1, 2}));
  reference::max_pool2d_forward(x, y, nullptr, nhwc);
  reference::max_pool2d_forward(x.permute({0, 3, 1, 2}), y_nchw, nullptr, nchw);
  expect_same(y_nchw, y.permute({0, 3, 1, 2}));
}

// ------------------------------------------------------------------------------------ norm

TEST(ReferenceNormTest, LayerNormOfOneRowByHand) {
  // mean 2.5, biased variance 1.25.
  const double r = 1.0 / std::sqrt(1.25);
  const Tensor gamma = f64({2, 2, 2, 2}, {4}), beta = f64({1, 1, 1, 1}, {4});
  Tensor y = empty64({1, 4}), mean = empty64({1}), rstd = empty64({1});
  reference::layer_norm_forward(f64({1, 2, 3, 4}, {1, 4}), &gamma, &beta, 4, 0.0, y, mean, rstd);
  expect_values(y, {1 - 3 * r, 1 - r, 1 + r, 1 + 3 * r});
  expect_values(mean, {2.5});
  expect_values(rstd, {r});
}

TEST(ReferenceNormTest, BatchNormTrainingComputesBatchStatisticsByHand) {
  // x [4, 2], channels on axis 1: channel 0 = 1, 2, 3, 4; channel 1 = 0, 4, 0, 4 (mean 2, var 4).
  const double r = 1.0 / std::sqrt(1.25);
  Tensor y = empty64({4, 2}), mean = empty64({2}), invstd = empty64({2});
  reference::batch_norm_forward(f64({1, 0, 2, 4, 3, 0, 4, 4}, {4, 2}), nullptr, nullptr, mean,
                                invstd, true, 0.0, 1, y);
  expect_values(mean, {2.5, 2});
  expect_values(invstd, {r, 0.5});
  expect_values(y, {-1.5 * r, -1, -0.5 * r, 1, 0.5 * r, -1, 1.5 * r, 1});
}

TEST(ReferenceNormTest, BatchNormInferenceUsesTheGivenStatistics) {
  Tensor mean = f64({1, -1}, {2}), invstd = f64({2, 0.5}, {2}), y = empty64({2, 2});
  const Tensor gamma = f64({3, 1}, {2}), beta = f64({0, 10}, {2});
  reference::batch_norm_forward(f64({2, 1, 0, 3}, {2, 2}), &gamma, &beta, mean, invstd, false, 1e-3,
                                -1, y);
  expect_values(y, {6, 11, -6, 12});
  expect_values(mean, {1, -1});  // untouched
}

TEST(ReferenceNormTest, BatchNormBackwardMatchesFiniteDifferences) {
  for (const int axis : {1, -1}) {
    Tensor x = randn({3, 4, 2}, 60), gamma = randn({axis == 1 ? 4 : 2}, 61);
    Tensor beta = randn(gamma.shape(), 62);
    const Tensor dy = randn(x.shape(), 63);
    const Shape c = gamma.shape();
    Tensor mean = empty64(c), invstd = empty64(c), y = empty64(x.shape());
    const auto loss = [&] {
      reference::batch_norm_forward(x, &gamma, &beta, mean, invstd, true, 1e-3, axis, y);
      return dot(y, dy);
    };
    const std::vector<double> want_dx = numeric_grad(x, loss),
                              want_dgamma = numeric_grad(gamma, loss),
                              want_dbeta = numeric_grad(beta, loss);
    loss();  // statistics of the unperturbed x
    Tensor dx = empty64(x.shape()), dgamma = empty64(c), dbeta = empty64(c);
    reference::batch_norm_backward(dy, x, &gamma, mean, invstd, axis, dx, &dgamma, &dbeta);
    expect_values(dx, want_dx, 1e-7);
    expect_values(dgamma, want_dgamma, 1e-7);
    expect_values(dbeta, want_dbeta, 1e-7);
    // Without gamma the scale is 1.
    Tensor dx_plain = empty64(x.shape());
    reference::batch_norm_forward(x, nullptr, nullptr, mean, invstd, true, 1e-3, axis, y);
    reference::batch_norm_backward(dy, x, nullptr, mean, invstd, axis, dx_plain, nullptr, nullptr);
    expect_values(dx_plain,
                  numeric_grad(x,
                               [&] {
                                 reference::batch_norm_forward(x, nullptr, nullptr, mean, invstd,
                                                               true, 1e-3, axis, y);
                                 return dot(y, dy);
                               }),
                  1e-7);
  }
}

TEST(ReferenceNormTest, LayerNormBackwardMatchesFiniteDifferences) {
  for (const int64_t norm_size : {4, 8}) {  // 8 spans the last two axes
    Tensor x = randn({3, 2, 4}, 70), gamma = randn({norm_size}, 71), beta = randn({norm_size}, 72);
    const Tensor dy = randn(x.shape(), 73);
    const int64_t rows = 24 / norm_size;
    Tensor y = empty64(x.shape()), mean = empty64({rows}), rstd = empty64({rows});
    const auto loss = [&] {
      reference::layer_norm_forward(x, &gamma, &beta, norm_size, 1e-5, y, mean, rstd);
      return dot(y, dy);
    };
    const std::vector<double> want_dx = numeric_grad(x, loss),
                              want_dgamma = numeric_grad(gamma, loss),
                              want_dbeta = numeric_grad(beta, loss);
    loss();
    Tensor dx = empty64(x.shape()), dgamma = empty64({norm_size}), dbeta = empty64({norm_size});
    reference::layer_norm_backward(dy, x, &gamma, mean, rstd, norm_size, dx, &dgamma, &dbeta);
    expect_values(dx, want_dx, 1e-7);
    expect_values(dgamma, want_dgamma, 1e-7);
    expect_values(dbeta, want_dbeta, 1e-7);
  }
}

// --------------------------------------------------------------------------------- softmax

TEST(ReferenceSoftmaxTest, SoftmaxOfOneTwoThreeByHand) {
  Tensor y = empty64({3});
  reference::softmax_forward(f64({1, 2, 3}, {3}), 0, false, y);
  expect_values(y, {0.09003057317038048, 0.2447284710547977, 0.665240955774822}, 1e-15);
}

TEST(ReferenceSoftmaxTest, LogSoftmaxIsStableForLargeInputs) {
  Tensor y = empty64({1, 3});
  reference::softmax_forward(f64({1000, 1001, 1002}, {1, 3}), -1, true, y);
  const double lse = 3.40760596444438;  // log(e + e^2 + e^3) for 1, 2, 3
  expect_values(y, {1 - lse, 2 - lse, 3 - lse}, 1e-12);
}

TEST(ReferenceSoftmaxTest, SoftmaxAlongTheMiddleAxisOfAStridedView) {
  const Tensor base = randn({2, 4, 3}, 80);
  const Tensor x = base.transpose(1, 2);  // [2, 3, 4], softmax over the 3
  Tensor y = empty64({2, 3, 4});
  reference::softmax_forward(x, 1, false, y);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t k = 0; k < 4; ++k) {
      double z = 0.0;
      for (int64_t j = 0; j < 3; ++j) z += std::exp(x.at({n, j, k}));
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_NEAR(y.at({n, j, k}), std::exp(x.at({n, j, k})) / z, 1e-15);
    }
  }
}

TEST(ReferenceSoftmaxTest, BackwardMatchesFiniteDifferences) {
  for (const bool log : {false, true}) {
    for (const int axis : {0, -1}) {
      Tensor x = randn({3, 5}, 90);
      const Tensor dy = randn({3, 5}, 91);
      Tensor y = empty64({3, 5}), dx = empty64({3, 5});
      const auto loss = [&] {
        reference::softmax_forward(x, axis, log, y);
        return dot(y, dy);
      };
      const std::vector<double> want = numeric_grad(x, loss);
      loss();
      reference::softmax_backward(dy, y, axis, log, dx);
      expect_values(dx, want, 1e-8);
    }
  }
}

TEST(ReferenceCrossEntropyTest, LabelSmoothingByHand) {
  // target = 0.9 * onehot(2) + 0.1 / 3, so loss = lse - sum(target * x) = lse - 2.9.
  const double lse = 3.40760596444438;
  Tensor losses = empty64({1}), probs = empty64({1, 3});
  reference::cross_entropy_forward(f64({1, 2, 3}, {1, 3}), from_vector<int32_t>({2}, {1}), 0.1,
                                   losses, probs);
  expect_values(losses, {lse - 2.9}, 1e-14);
  expect_values(probs, {0.09003057317038048, 0.2447284710547977, 0.665240955774822}, 1e-15);
}

TEST(ReferenceCrossEntropyTest, IndexAndOneHotLabelsAgree) {
  const Tensor logits = randn({4, 5}, 100);
  const Tensor index = from_vector<int64_t>({0, 4, 2, 2}, {4});
  std::vector<double> onehot(20, 0.0);
  for (int n = 0; n < 4; ++n) onehot[n * 5 + static_cast<int>(index.at({n}))] = 1.0;
  Tensor l1 = empty64({4}), l2 = empty64({4}), p1 = empty64({4, 5}), p2 = empty64({4, 5});
  reference::cross_entropy_forward(logits, index, 0.2, l1, p1);
  reference::cross_entropy_forward(logits, f64(onehot, {4, 5}), 0.2, l2, p2);
  expect_same(l1, l2, 1e-14);
  expect_same(p1, p2, 1e-15);
}

TEST(ReferenceCrossEntropyTest, BackwardMatchesFiniteDifferences) {
  const Tensor index = from_vector<int32_t>({1, 0, 4}, {3});
  // A distribution per row (rows sum to 1, which the backward formula assumes).
  const Tensor dist = f64({0.5, 0.25, 0.25, 0, 0, 0.1, 0.2, 0.3, 0.4, 0, 0, 0, 0, 0, 1}, {3, 5});
  for (const Tensor* labels : {&index, &dist}) {
    Tensor logits = randn({3, 5}, 110);
    const Tensor dloss = randn({3}, 111);
    Tensor losses = empty64({3}), probs = empty64({3, 5}), dlogits = empty64({3, 5});
    const auto loss = [&] {
      reference::cross_entropy_forward(logits, *labels, 0.1, losses, probs);
      return dot(losses, dloss);
    };
    const std::vector<double> want = numeric_grad(logits, loss);
    loss();
    reference::cross_entropy_backward(probs, *labels, 0.1, dloss, dlogits);
    expect_values(dlogits, want, 1e-8);
  }
}

TEST(ReferenceCrossEntropyTest, OutOfRangeLabelNamesLabelSampleAndClassCount) {
  const Tensor logits = randn({4, 10}, 120);
  Tensor losses = empty64({4}), probs = empty64({4, 10}), dlogits = empty64({4, 10});
  const Tensor too_big = from_vector<int64_t>({0, 1, 2, 12}, {4});
  EXPECT_NE(value_error_message([&] {
              reference::cross_entropy_forward(logits, too_big, 0.0, losses, probs);
            }).find("cross_entropy: label 12 of sample 3 is out of range for 10 classes"),
            std::string::npos);
  const Tensor negative = from_vector<int32_t>({0, -1, 2, 3}, {4});
  EXPECT_NE(value_error_message([&] {
              reference::cross_entropy_backward(probs, negative, 0.0, randn({4}, 1), dlogits);
            }).find("label -1 of sample 1 is out of range for 10 classes"),
            std::string::npos);
}

// ------------------------------------------------------------------------------- embedding

TEST(ReferenceEmbeddingTest, GatherRowsCopiesTheIndexedRows) {
  const Tensor table = f64({0, 1, 10, 11, 20, 21}, {3, 2});
  Tensor out = empty64({2, 2, 2});  // indices [2, 2] -> out [2, 2, D]
  reference::gather_rows(table, from_vector<int32_t>({2, 0, 2, 1}, {2, 2}), out);
  expect_values(out, {20, 21, 0, 1, 20, 21, 10, 11});
}

TEST(ReferenceEmbeddingTest, ScatterAddRowsSumsRepeatedIndices) {
  Tensor dtable = f64(std::vector<double>(6, 0.0), {3, 2});
  reference::scatter_add_rows(f64({1, 2, 3, 4, 5, 6}, {3, 2}), from_vector<int64_t>({2, 0, 2}, {3}),
                              dtable);
  expect_values(dtable, {3, 4, 0, 0, 6, 8});
}

TEST(ReferenceEmbeddingTest, ScatterAddIsTheAdjointOfGather) {
  const Tensor table = randn({5, 3}, 130).transpose(0, 1).contiguous().transpose(0, 1);  // strided
  const Tensor idx = from_vector<int64_t>({4, 1, 1, 0, 3, 4, 4}, {7});
  const Tensor dout = randn({7, 3}, 131);
  Tensor out = empty64({7, 3}), dtable = f64(std::vector<double>(15, 0.0), {5, 3});
  reference::gather_rows(table, idx, out);
  reference::scatter_add_rows(dout, idx, dtable);
  EXPECT_NEAR(dot(out, dout), dot(table, dtable), 1e-12);
}

TEST(ReferenceEmbeddingTest, OutOfRangeIndexNamesIndexPositionAndTableSize) {
  const Tensor table = randn({5, 3}, 140);
  Tensor out = empty64({3, 3}), dtable = empty64({5, 3});
  const std::string gather = value_error_message([&] {
    reference::gather_rows(table, from_vector<int32_t>({0, 5, 1}, {3}), out);
  });
  EXPECT_NE(gather.find("gather_rows: index 5 at position 1 is out of range for a table of 5 rows"),
            std::string::npos)
      << gather;
  const std::string scatter = value_error_message([&] {
    reference::scatter_add_rows(randn({3, 3}, 1), from_vector<int64_t>({0, 1, -2}, {3}), dtable);
  });
  EXPECT_NE(scatter.find("scatter_add_rows: index -2 at position 2 is out of range"),
            std::string::npos)
      << scatter;
}

// ------------------------------------------------------------------------------ the table

TEST(ReferenceBackendTest, TableHoldsTheReferenceNnKernels) {
  const Backend& b = reference_backend();
  EXPECT_EQ(b.matmul, &reference::matmul);
  EXPECT_EQ(b.conv2d_forward, &reference::conv2d_forward);
  EXPECT_EQ(b.conv2d_backward_data, &reference::conv2d_backward_data);
  EXPECT_EQ(b.conv2d_backward_weights, &reference::conv2d_backward_weights);
  EXPECT_EQ(b.max_pool2d_forward, &reference::max_pool2d_forward);
  EXPECT_EQ(b.max_pool2d_backward, &reference::max_pool2d_backward);
  EXPECT_EQ(b.avg_pool2d_forward, &reference::avg_pool2d_forward);
  EXPECT_EQ(b.avg_pool2d_backward, &reference::avg_pool2d_backward);
  EXPECT_EQ(b.batch_norm_forward, &reference::batch_norm_forward);
  EXPECT_EQ(b.batch_norm_backward, &reference::batch_norm_backward);
  EXPECT_EQ(b.layer_norm_forward, &reference::layer_norm_forward);
  EXPECT_EQ(b.layer_norm_backward, &reference::layer_norm_backward);
  EXPECT_EQ(b.softmax_forward, &reference::softmax_forward);
  EXPECT_EQ(b.softmax_backward, &reference::softmax_backward);
  EXPECT_EQ(b.cross_entropy_forward, &reference::cross_entropy_forward);
  EXPECT_EQ(b.cross_entropy_backward, &reference::cross_entropy_backward);
  EXPECT_EQ(b.gather_rows, &reference::gather_rows);
  EXPECT_EQ(b.scatter_add_rows, &reference::scatter_add_rows);
}

}  // namespace
}  // namespace osprey
