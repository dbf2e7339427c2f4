#include "osprey/nn/layers/pooling1d.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// PyTorch 1.13 references (float64), printed by torch_references_1d.py from inputs made by
// test::wave.
// [1, 3, 2]
const std::vector<double> kMaxPool1d2 = {
    0.9639829961524481,  0.9949243497775809,  0.5325349075556212,
    0.19042264736102704, -0.7946357497573974, -0.8971105228496424,
};
// [1, 7, 2]
const std::vector<double> kAvgPool1d3Same = {
    0.9275951781069418,  0.8987477080121641,  0.7959084212565015,   0.6626393544617851,
    0.439685159622403,   0.1572216410844559,  -0.14652108901421212, -0.43043287707630756,
    -0.6560875944780328, -0.7929439338131975, -0.8224790315748985,  -0.7406954508364957,
    -0.836400672483649,  -0.6308469321369718,
};
// [1, 2, 4]
const std::vector<double> kMaxPool1d3Stride2SameChannelsFirst = {
    0.9999576464987401,  0.9999576464987401,  0.7322314440302514, 0.08150215176026912,
    -0.6118578909427189, -0.8564779741650012, -0.59171558063101,  -0.2601574914304689,
};
// [2, 3]
const std::vector<double> kGlobalAvg1d = {
    -0.05277827762539637, -0.0945491422630754,   -0.12352322404552443,
    0.04469844480744014,  -0.004790745774095351, -0.05363153138951084,
};
// [2, 3]
const std::vector<double> kGlobalMax1d = {
    0.9687151001182652, 0.9929036510941185, 0.8827073508159741,
    0.992070188249698,  0.8794844975308649, 0.970383833000575,
};

TEST(Pooling1DTest, ForwardMatchesPyTorch) {
  const Variable x(wave({1, 7, 2}, 10));
  auto max2 = layers::MaxPooling1D(2, {.dtype = "float64"});
  EXPECT_EQ(max2->compute_output_shape({{-1, 7, 2}}), (Shape{-1, 3, 2}));
  test::expect_values_near(max2(x).value(), kMaxPool1d2);
  auto avg3 = layers::AveragePooling1D(3, {.strides = 1, .padding = "same", .dtype = "float64"});
  test::expect_values_near(avg3(x).value(), kAvgPool1d3Same);
  auto max3 = layers::MaxPooling1D(
      3, {.strides = 2, .padding = "same", .data_format = "channels_first", .dtype = "float64"});
  EXPECT_EQ(max3->compute_output_shape({{-1, 2, 7}}), (Shape{-1, 2, 4}));
  test::expect_values_near(max3(Variable(wave({1, 2, 7}, 11))).value(),
                           kMaxPool1d3Stride2SameChannelsFirst);
  const Variable s(wave({2, 5, 3}, 12));
  test::expect_values_near(layers::GlobalAveragePooling1D({.dtype = "float64"})(s).value(),
                           kGlobalAvg1d);
  test::expect_values_near(layers::GlobalMaxPooling1D({.dtype = "float64"})(s).value(),
                           kGlobalMax1d);
}

TEST(Pooling1DTest, PassTheLayerConformanceCheck) {
  const testing::ConformanceExpectations no_weights{.output_shape = {2, 3, 4}, .params = 0};
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::MaxPooling1D(2, {.dtype = "float64"}); },
                                  Shape{2, 6, 4}, no_weights);
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::AveragePooling1D(3, {.strides = 2, .padding = "same", .dtype = "float64"});
      },
      Shape{2, 6, 4}, no_weights);
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::GlobalAveragePooling1D({.keepdims = true, .dtype = "float64"}); },
      Shape{2, 6, 4}, {.output_shape = {2, 1, 4}, .params = 0});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::GlobalMaxPooling1D({.data_format = "channels_first", .dtype = "float64"});
      },
      Shape{2, 6, 4}, {.output_shape = {2, 6}, .params = 0});
}

TEST(Pooling1DTest, ConfigsUseKerasFieldNames) {
  const nlohmann::json c = layers::MaxPooling1D(3, {.padding = "same"})->get_config();
  EXPECT_EQ(c["pool_size"], nlohmann::json::array({3}));
  EXPECT_EQ(c["strides"], nlohmann::json::array({3}));  // strides=None: the pool size
  EXPECT_EQ(c["padding"], "same");
  nlohmann::json keras = c;
  keras["pool_size"] = 4;
  keras["strides"] = nlohmann::json();  // Keras writes null for strides=None
  auto back = std::dynamic_pointer_cast<MaxPooling1D>(layer_from_config("MaxPooling1D", keras));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->pool_size(), 4);
  EXPECT_EQ(back->options().strides, 4);
  const nlohmann::json g = layers::GlobalAveragePooling1D({.keepdims = true})->get_config();
  EXPECT_EQ(g["keepdims"], true);
  EXPECT_EQ(g["data_format"], "channels_last");
}

TEST(Pooling1DTest, RejectBadArgumentsWithKerasStyleMessages) {
  EXPECT_EQ(test::value_error([] { layers::MaxPooling1D(0); }),
            "MaxPooling1D: pool_size must be positive. Received: pool_size=0");
  EXPECT_EQ(test::value_error([] { layers::AveragePooling1D(2, {.padding = "causal"}); }),
            "AveragePooling1D: padding must be 'valid' or 'same'. Received: padding='causal'");
  EXPECT_EQ(test::value_error([] { layers::GlobalMaxPooling1D({.data_format = "NTC"}); }),
            "GlobalMaxPooling1D: data_format must be 'channels_last' or 'channels_first'. "
            "Received: data_format='NTC'");
  auto pool = layers::MaxPooling1D(2, {.name = "p"});
  EXPECT_EQ(test::value_error([&] {
              pool(Variable(zeros({2, 8})));
            }),
            "p: expected a 3-D input [batch, steps, channels]. Received: [2, 8]");
  auto gap = layers::GlobalAveragePooling1D({.data_format = "channels_first", .name = "g"});
  EXPECT_EQ(test::value_error([&] {
              gap(Variable(zeros({2, 8, 3, 3})));
            }),
            "g: expected a 3-D input [batch, channels, steps]. Received: [2, 8, 3, 3]");
}

}  // namespace
}  // namespace osprey::nn
