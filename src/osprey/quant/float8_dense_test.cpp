// Float8Dense and Float8Conv2D: forward and gradients against a float64 reference of the same
// fake-quant formula (its own round-to-nearest-even on the float8 grids), the delayed-scaling
// updates of one training step, weight names, and config round trips.
#include "osprey/quant/float8_dense.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/autograd/ops.h"
#include "osprey/quant/float8_conv2d.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::quant {
namespace {

// v rounded to the float8 grid with `mant` mantissa bits and smallest normal exponent min_exp,
// saturating at max: an independent float64 model of core/float_types.h.
double round_f8(double v, int mant, int min_exp, double max) {
  const double a = std::fabs(v);
  if (a >= max) return std::copysign(max, v);
  if (a == 0.0) return 0.0;
  const double ulp = std::ldexp(1.0, std::max(std::ilogb(a), min_exp) - mant);
  return std::copysign(std::nearbyint(a / ulp) * ulp, v);  // ties to even in the default mode
}
std::vector<double> qdq_e4m3(const std::vector<double>& x, double scale) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = round_f8(x[i] * scale, 3, -6, 448.0) / scale;
  return y;
}
std::vector<double> qdq_e5m2(const std::vector<double>& x, double scale) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = round_f8(x[i] * scale, 2, -14, 57344.0) / scale;
  return y;
}
// a [m, k] · b [k, n], or with transpose flags on the stored row-major operands.
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int64_t m,
                           int64_t k, int64_t n, bool ta = false, bool tb = false) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        c[i * n + j] += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
  return c;
}
double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}
void set_scale(const Float8Scaling& s, double v) {
  Tensor t = s.scale.value();
  t.fill_(v);
}

struct DenseCase {
  std::shared_ptr<Float8Dense> layer;
  Tensor x, upstream;
};

// x [5, 4] -> relu Dense(3), scales chosen as powers of two so x * scale is exact in float32 and
// the float64 reference quantizes exactly the same numbers.
DenseCase dense_case() {
  nn::clear_session();
  DenseCase c;
  c.layer = std::make_shared<Float8Dense>(3, "relu", nn::DenseOptions{},
                                          precision::DelayedScaling{.amax_history_length = 4});
  c.layer->build({Shape{-1, 4}});
  Tensor k = c.layer->kernel().value(), b = c.layer->bias().value();
  k.copy_(random_normal({4, 3}, {.seed = 2, .stddev = 0.5}));
  b.copy_(random_normal({3}, {.seed = 3, .stddev = 0.1}));
  set_scale(c.layer->scalings().inputs, 64.0);
  set_scale(c.layer->scalings().kernel, 256.0);
  set_scale(c.layer->scalings().outputs_grad, 1024.0);
  c.x = random_normal({5, 4}, {.seed = 1, .stddev = 2.0});
  c.upstream = random_normal({5, 3}, {.seed = 4});
  return c;
}

TEST(Float8DenseTest, ForwardAndGradientsMatchAFloat64ReferenceOfTheFakeQuantFormula) {
  DenseCase c = dense_case();
  const auto x = testing::values(c.x), k = testing::values(c.layer->kernel().value()),
             b = testing::values(c.layer->bias().value()), g = testing::values(c.upstream);
  Variable xv(c.x, true);
  Variable y = (*c.layer)(xv, /*training=*/true);
  y.backward(c.upstream);

  const auto xq = qdq_e4m3(x, 64.0), kq = qdq_e4m3(k, 256.0);
  std::vector<double> pre = matmul(xq, kq, 5, 4, 3), out(15), dz(15);
  for (int64_t i = 0; i < 15; ++i) {
    pre[i] += b[i % 3];
    out[i] = std::max(pre[i], 0.0);
    dz[i] = pre[i] > 0.0 ? g[i] : 0.0;
  }
  const auto dzq = qdq_e5m2(dz, 1024.0);
  std::vector<double> db(3, 0.0);
  for (int64_t i = 0; i < 15; ++i) db[i % 3] += dz[i];  // the bias sees the unquantized gradient
  testing::expect_near_all(testing::values(y), out, 1e-5);
  testing::expect_near_all(testing::values(xv.grad()), matmul(dzq, kq, 5, 3, 4, false, true), 1e-5);
  testing::expect_near_all(testing::values(c.layer->kernel().grad()),
                           matmul(xq, dzq, 4, 5, 3, true, false), 1e-5);
  testing::expect_near_all(testing::values(c.layer->bias().grad()), db, 1e-5);
  ASSERT_NE(qdq_e5m2(dz, 1024.0), dz);  // the gradient was really quantized
  ASSERT_NE(xq, x);

  // The step recorded each tensor's amax and moved its scale to float8_max / amax.
  const auto& s = c.layer->scalings();
  EXPECT_EQ(s.inputs.amax_history.value().to_vector<float>(),
            (std::vector<float>{static_cast<float>(max_abs(x)), 0, 0, 0}));
  EXPECT_EQ(static_cast<float>(s.inputs.scale.item()), 448.0f / static_cast<float>(max_abs(x)));
  EXPECT_EQ(static_cast<float>(s.kernel.scale.item()), 448.0f / static_cast<float>(max_abs(k)));
  EXPECT_EQ(s.outputs_grad.amax_history.value().at({0}), static_cast<float>(max_abs(dz)));
  EXPECT_EQ(static_cast<float>(s.outputs_grad.scale.item()),
            57344.0f / static_cast<float>(max_abs(dz)));
}

TEST(Float8DenseTest, InferenceUsesTheStoredScalesAndUpdatesNothing) {
  DenseCase c = dense_case();
  const auto x = testing::values(c.x), k = testing::values(c.layer->kernel().value()),
             b = testing::values(c.layer->bias().value());
  const std::vector<Tensor> before = [&] {
    std::vector<Tensor> w;
    for (const auto& v : c.layer->non_trainable_variables()) w.push_back(v.value().clone());
    return w;
  }();
  const Variable y = (*c.layer)(Variable(c.x), /*training=*/false);
  std::vector<double> out = matmul(qdq_e4m3(x, 64.0), qdq_e4m3(k, 256.0), 5, 4, 3);
  for (int64_t i = 0; i < 15; ++i) out[i] = std::max(out[i] + b[i % 3], 0.0);
  testing::expect_near_all(testing::values(y), out, 1e-5);
  const auto after = c.layer->non_trainable_variables();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].value().to_vector<float>(), before[i].to_vector<float>()) << after[i].name();
  }
}

TEST(Float8DenseTest, ScalingStateIsNonTrainableWeightsNamedAsInKeras) {
  nn::clear_session();
  auto f = std::make_shared<Float8Dense>(2, "linear", nn::DenseOptions{.name = "dense"},
                                         precision::DelayedScaling{.amax_history_length = 8});
  f->build({Shape{-1, 3}});
  std::vector<std::string> names, trainable;
  for (const auto& v : f->variables()) names.push_back(v.name());
  for (const auto& v : f->trainable_variables()) trainable.push_back(v.name());
  EXPECT_EQ(names,
            (std::vector<std::string>{"dense/kernel", "dense/bias", "dense/inputs_scale",
                                      "dense/inputs_amax_history", "dense/kernel_scale",
                                      "dense/kernel_amax_history", "dense/outputs_grad_scale",
                                      "dense/outputs_grad_amax_history"}));
  EXPECT_EQ(trainable, (std::vector<std::string>{"dense/kernel", "dense/bias"}));
  EXPECT_EQ(f->scalings().inputs.amax_history.shape(), (Shape{8}));
  EXPECT_EQ(f->scalings().outputs_grad.format, DType::float8_e5m2);
  EXPECT_EQ(f->scalings().kernel.scale.item(), 1.0);
}

TEST(Float8DenseTest, ConfigRecordsTheModeAndRoundTrips) {
  nn::clear_session();
  Float8Dense f(7, "tanh", {.use_bias = false, .name = "head"},
                {.amax_history_length = 16, .margin = 2});
  const nlohmann::json c = f.get_config();
  EXPECT_EQ(c.at("quantization_mode"), "float8");
  EXPECT_EQ(c.at("amax_history_length"), 16);
  EXPECT_EQ(c.at("margin"), 2);
  EXPECT_EQ(c.at("units"), 7);
  EXPECT_EQ(f.class_name(), "Float8Dense");
  EXPECT_EQ(Float8Dense::from_config(c)->get_config(), c);
  nlohmann::json bad = c;
  bad["quantization_mode"] = "int8";
  testing::expect_error<ValueError>(
      [&] { Float8Dense::from_config(bad); },
      {"Float8Dense: quantization_mode must be \"float8\". Received: \"int8\""});
  bad = c;
  bad["amax_history_length"] = 0;
  testing::expect_error<ValueError>([&] { Float8Dense::from_config(bad); },
                                    {"Float8Dense: amax_history_length must be at least 1"});
  testing::expect_error<ValueError>(
      [&] { Float8Dense(2, "relu", {}, {.margin = -3}); },
      {"Float8Dense: margin must be non-negative. Received: margin=-3"});
}

// Float8Conv2D against the float32 ops applied to the fake-quantized operands (the recipe itself
// is pinned by the Dense test and precision/float8_test.cpp): forward, input, kernel and bias
// gradients, for both data formats.
void check_conv(const std::string& data_format) {
  nn::clear_session();
  const bool last = data_format == "channels_last";
  const nn::Conv2DOptions opts{.padding = "same", .data_format = data_format, .activation = "relu"};
  auto f = std::make_shared<Float8Conv2D>(4, std::array<int64_t, 2>{3, 3}, opts);
  const Shape xs = last ? Shape{2, 6, 5, 3} : Shape{2, 3, 6, 5};
  f->build({xs});
  Tensor k = f->kernel().value(), b = f->bias().value();
  k.copy_(random_normal(k.shape(), {.seed = 5, .stddev = 0.3}));
  b.copy_(random_normal({4}, {.seed = 6, .stddev = 0.1}));
  set_scale(f->scalings().inputs, 32.0);
  set_scale(f->scalings().kernel, 512.0);
  set_scale(f->scalings().outputs_grad, 256.0);
  const Tensor x = random_normal(xs, {.seed = 7, .stddev = 1.5});
  Variable xv(x, true);
  Variable y = (*f)(xv, true);
  const Tensor g = random_normal(y.shape(), {.seed = 8});
  y.backward(g);

  Variable xr(precision::quantize_dequantize(x, DType::float8_e4m3fn, 32.0f), true);
  Variable kr(precision::quantize_dequantize(k, DType::float8_e4m3fn, 512.0f), true);
  const Conv2dOptions co{.padding = "same", .data_format = last ? "NHWC" : "NCHW"};
  Variable pre = autograd::conv2d(xr, kr, co);
  Variable br(b.clone(), true);
  Variable yr = autograd::relu(autograd::add(pre, last ? br : autograd::reshape(br, {4, 1, 1})));
  testing::expect_near_all(testing::values(y), testing::values(yr), 1e-5);
  // d(pre) by hand, then quantized: the reference's gradients through conv are the float32 ops'.
  const Tensor dz = mul(g, gt(yr.value(), zeros_like(yr.value())).to(DType::float32));
  const Tensor dzq = precision::quantize_dequantize(dz, DType::float8_e5m2, 256.0f);
  pre.backward(dzq);
  testing::expect_near_all(testing::values(xv.grad()), testing::values(xr.grad()), 1e-5);
  testing::expect_near_all(testing::values(f->kernel().grad()), testing::values(kr.grad()), 1e-4);
  testing::expect_near_all(
      testing::values(f->bias().grad()),
      testing::values(sum(dz, last ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 2, 3})), 1e-4);
  EXPECT_NE(testing::values(dzq), testing::values(dz));
  EXPECT_NE(f->scalings().outputs_grad.scale.item(), 256.0);  // updated by backward
}

TEST(Float8Conv2DTest, ForwardAndGradientsAreTheFloat32OpsOnFakeQuantizedOperandsChannelsLast) {
  check_conv("channels_last");
}

TEST(Float8Conv2DTest, ForwardAndGradientsAreTheFloat32OpsOnFakeQuantizedOperandsChannelsFirst) {
  check_conv("channels_first");
}

TEST(Float8Conv2DTest, ConfigRecordsTheModeAndRoundTrips) {
  nn::clear_session();
  Float8Conv2D f(8, {3, 3}, {.strides = {2, 2}, .padding = "same", .activation = "relu"},
                 {.amax_history_length = 32});
  const nlohmann::json c = f.get_config();
  EXPECT_EQ(c.at("quantization_mode"), "float8");
  EXPECT_EQ(c.at("amax_history_length"), 32);
  EXPECT_EQ(c.at("filters"), 8);
  EXPECT_EQ(Float8Conv2D::from_config(c)->get_config(), c);
}

}  // namespace
}  // namespace osprey::quant
