#include "osprey/quant/quantized_conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "osprey/nn/layers/conv2d.h"
#include "osprey/nn/layers/pooling2d.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::quant {
namespace {

using autograd::Variable;

std::shared_ptr<nn::Conv2D> built_conv(int64_t c, int64_t filters, const char* activation,
                                       const char* padding = "valid") {
  auto conv = std::make_shared<nn::Conv2D>(
      filters, std::array<int64_t, 2>{3, 3},
      nn::Conv2DOptions{.padding = padding, .activation = activation, .bias_initializer = "ones"});
  conv->build({Shape{-1, 8, 8, c}});
  return conv;
}

TEST(QuantizedConv2DTest, WeightsAreInt8KernelsWithPerFilterScalesUnderTheConv2DPaths) {
  nn::clear_session();
  auto conv = built_conv(4, 6, "relu");
  conv->set_path_prefix("sequential");
  auto q = QuantizedConv2D::from_conv2d(*conv);
  q->set_path_prefix("sequential");
  const auto vars = q->variables();
  ASSERT_EQ(vars.size(), 3u);
  EXPECT_EQ(vars[0].name(), "sequential/conv2d/kernel");
  EXPECT_EQ(vars[0].value().dtype(), DType::int8);
  EXPECT_EQ(vars[0].shape(), (Shape{3, 3, 4, 6}));
  EXPECT_EQ(vars[1].name(), "sequential/conv2d/kernel_scale");
  EXPECT_EQ(vars[1].shape(), (Shape{6}));
  EXPECT_EQ(vars[2].name(), "sequential/conv2d/bias");
  EXPECT_TRUE(q->trainable_variables().empty());
  // Per filter, abs-max over its 3 * 3 * 4 weights: 127 / (max |w[..., o]| + 1e-7).
  const auto w = conv->kernel().value().to_vector<double>();
  const auto s = q->kernel_scale().value().to_vector<double>();
  const auto k = q->kernel().value().to_vector<int8_t>();
  for (int64_t o = 0; o < 6; ++o) {
    double amax = 0.0;
    int qmax = 0;
    for (int64_t t = 0; t < 36; ++t) {
      amax = std::max(amax, std::fabs(w[t * 6 + o]));
      qmax = std::max(qmax, std::abs(int{k[t * 6 + o]}));
    }
    EXPECT_NEAR(s[o], 127.0 / (amax + 1e-7), 127.0 / amax * 2.4e-7);
    EXPECT_EQ(qmax, 127);
  }
}

TEST(QuantizedConv2DTest, ForwardIsTheInt8ConvolutionOfTheConvWeightsAndCloseToConv2D) {
  nn::clear_session();
  for (const char* act : {"linear", "relu", "tanh"}) {
    auto conv = built_conv(3, 5, act, "same");
    auto q = QuantizedConv2D::from_conv2d(*conv);
    const Variable x(random_normal({4, 8, 8, 3}, {.seed = 3}));
    const Tensor y = (*q)(x).value();
    ASSERT_EQ(y.shape(), (Shape{4, 8, 8, 5}));
    const auto yq = y.to_vector<double>();
    const auto yf = (*conv)(x).value().to_vector<double>();
    double range = 0.0, worst = 0.0;
    for (size_t i = 0; i < yf.size(); ++i) {
      range = std::max(range, std::fabs(yf[i]));
      worst = std::max(worst, std::fabs(yf[i] - yq[i]));
    }
    EXPECT_LT(worst, 0.02 * range) << act;  // the quantization-error scale for 27 taps
  }
  // A sample's output does not depend on the other samples of its batch (per-sample scales).
  auto q = QuantizedConv2D::from_conv2d(*built_conv(3, 5, "relu"));
  const Tensor x = random_normal({3, 8, 8, 3}, {.seed = 4});
  std::vector<float> v = x.to_vector<float>();
  for (size_t i = 0; i < 8 * 8 * 3; ++i) v[i] *= 100.0f;
  const Tensor big = from_vector<float>(v, x.shape());
  EXPECT_EQ((*q)(Variable(x)).value().narrow(0, 1, 2).to_vector<float>(),
            (*q)(Variable(big)).value().narrow(0, 1, 2).to_vector<float>());
}

TEST(QuantizedConv2DTest, ConfigRoundTripsAndNamesTheMode) {
  nn::clear_session();
  auto q = QuantizedConv2D::from_conv2d(*built_conv(2, 3, "relu", "same"));
  const nlohmann::json c = q->get_config();
  EXPECT_EQ(c["quantization_mode"], "int8");
  EXPECT_EQ(c["filters"], 3);
  EXPECT_EQ(c["padding"], "same");
  auto back = QuantizedConv2D::from_config(c);
  EXPECT_EQ(back->get_config(), c);
  nlohmann::json bad = c;
  bad["quantization_mode"] = "int4";
  testing::expect_error<ValueError>(
      [&] { QuantizedConv2D::from_config(bad); },
      {"QuantizedConv2D: quantization_mode must be \"int8\"", "int4"});
}

// A folded MaxPooling2D: the layer returns exactly what the MaxPooling2D would return on the
// unfolded layer's output (the kernel pools the int32 sums first; see ops_quant_test.cpp for why
// that is exact), with the pooled shape, and the config keeps the pooling layer for load_model.
TEST(QuantizedConv2DTest, AFoldedMaxPoolingGivesThePooledOutputOfTheUnfoldedLayerBitForBit) {
  nn::clear_session();
  // 5 filters: the scalar channel loop; 21: two 8-channel register blocks and a tail of 5.
  for (const auto& [act, filters] : std::vector<std::pair<const char*, int64_t>>{
           {"linear", 5}, {"relu", 5}, {"sigmoid", 5}, {"tanh", 5}, {"linear", 21}, {"relu", 21}}) {
    auto conv = built_conv(3, filters, act);
    auto pool = std::make_shared<nn::MaxPooling2D>(std::array<int64_t, 2>{2, 2},
                                                   nn::Pooling2DOptions{.padding = "same"});
    ASSERT_TRUE(QuantizedConv2D::can_fold(*conv, *pool)) << act;
    auto q = QuantizedConv2D::from_conv2d(*conv);
    auto folded = QuantizedConv2D::from_conv2d(*conv, pool.get());
    const Variable x(random_normal({4, 8, 8, 3}, {.seed = 5}));
    const Tensor y = (*folded)(x).value();
    ASSERT_EQ(y.shape(), (Shape{4, 3, 3, filters})) << act;  // 8 -> 6 (conv) -> 3 (pool, same)
    EXPECT_EQ(folded->compute_output_shape({Shape{-1, 8, 8, 3}}), (Shape{-1, 3, 3, filters}));
    EXPECT_EQ(y.to_vector<float>(), (*pool)((*q)(x)).value().to_vector<float>()) << act;
    const nlohmann::json c = folded->get_config();
    EXPECT_EQ(c["fused_max_pooling"]["name"], pool->name());
    EXPECT_EQ(c["fused_max_pooling"]["padding"], "same");
    auto back = QuantizedConv2D::from_config(c);
    EXPECT_EQ(back->get_config(), c);
    EXPECT_FALSE(q->get_config().contains("fused_max_pooling"));
  }
}

TEST(QuantizedConv2DTest, FoldingAPoolAfterANonMonotoneActivationOrAnotherFormatIsAValueError) {
  nn::clear_session();
  auto gelu = built_conv(3, 4, "gelu");
  nn::MaxPooling2D pool(std::array<int64_t, 2>{2, 2});
  EXPECT_FALSE(QuantizedConv2D::can_fold(*gelu, pool));
  testing::expect_error<ValueError>(
      [&] { QuantizedConv2D::from_conv2d(*gelu, &pool); },
      {"conv2d: a folded MaxPooling2D needs an activation that commutes with the maximum (linear, "
       "relu, sigmoid or tanh). Received: gelu"});
  nn::MaxPooling2D nchw(std::array<int64_t, 2>{2, 2}, {.data_format = "channels_first"});
  auto relu = built_conv(3, 4, "relu");
  EXPECT_FALSE(QuantizedConv2D::can_fold(*relu, nchw));
  testing::expect_error<ValueError>(
      [&] { QuantizedConv2D::from_conv2d(*relu, &nchw); },
      {"must have data_format 'channels_last'. Received: 'channels_first'"});
}

TEST(QuantizedConv2DTest, AnUnbuiltConvOrWrongInputChannelsAreValueErrors) {
  nn::clear_session();
  nn::Conv2D unbuilt(4, {3, 3});
  testing::expect_error<ValueError>([&] { QuantizedConv2D::from_conv2d(unbuilt); },
                                    {"conv2d", "not built"});
  auto q = QuantizedConv2D::from_conv2d(*built_conv(3, 2, "relu"));
  testing::expect_error<ValueError>(
      [&] {
        (*q)(Variable(zeros({1, 8, 8, 4})));
      },
      {"expected inputs with 3 channels", "[1, 8, 8, 4]"});
}

}  // namespace
}  // namespace osprey::quant
