#include "osprey/nn/layers/pooling2d.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/global_average_pooling2d.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// PyTorch 1.13 references (float64) on test::wave inputs, NHWC permuted to NCHW and back.
// max_pool2d(x, 2) on wave([1, 4, 4, 2], 9):
// [1, 2, 2, 2]
const std::vector<double> kMaxPool2 = {
    0.9873538397007164, 0.9778646024353161, 0.622233555319305,  0.2970413513068324,
    0.9792677826862,    0.9862505748896837, 0.8597489784924482, 0.6168843911210448,
};
// "same", 3x3 window, stride 1 on wave([1, 4, 5, 1], 10): padding=1 (-inf for max;
// count_include_pad=False for the average, as Keras):
// [1, 4, 5, 1]
const std::vector<double> kMaxPool3Same = {
    0.9949243497775809, 0.9949243497775809, 0.9949243497775809, 0.9639829961524481,
    0.8025710662467472, 0.9949243497775809, 0.9949243497775809, 0.9949243497775809,
    0.9639829961524481, 0.8025710662467472, 0.6719322456828615, 0.8942777605964088,
    0.9955869758598548, 0.9955869758598548, 0.9955869758598548, 0.6719322456828615,
    0.8942777605964088, 0.9955869758598548, 0.9955869758598548, 0.9955869758598548,
};
// [1, 4, 5, 1]
const std::vector<double> kAvgPool3Same = {
    0.47477298308979576,  0.39029102302620416,   0.21134190787068538,   0.003788656934578194,
    -0.10498056604764305, 0.0009694667789500085, -0.025351747739968414, -0.07447546146458767,
    -0.11351927086015873, -0.13128181790133542,  -0.14162313499827575,  -0.12815850843101215,
    -0.09666228702432665, -0.052083278532186084, -0.027510290150036625, -0.21567475812745532,
    -0.10750966800747828, 0.10391106362228729,   0.301267920259612,     0.3974916242731802,
};
// avg_pool2d(x, 2, stride=1) on the NCHW wave([1, 2, 3, 3], 11):
// [1, 2, 2, 2]
const std::vector<double> kAvgPool2ChannelsFirst = {
    0.7760510435606259,  0.6117046488557513,  0.06808673067779919, -0.23760865779683116,
    -0.7043973128398519, -0.4943179843249329, 0.0890631906619752,  0.38340713186429554,
};
// x.mean(dim=(1, 2)) on wave([1, 3, 4, 2], 12):
// [1, 2]
const std::vector<double> kGlobalAvg = {
    0.1729159676847961,
    0.11089602132134985,
};

TEST(Pooling2DTest, ShapesMatchKeras) {
  // Keras: MaxPooling2D() on 26x26x32 -> 13x13x32; strides default to the pool size.
  auto pool = layers::MaxPooling2D();
  EXPECT_EQ(pool->compute_output_shape({{-1, 26, 26, 32}}), (Shape{-1, 13, 13, 32}));
  EXPECT_EQ(pool->strides(), (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(pool(Variable(zeros({2, 7, 7, 3}))).shape(), (Shape{2, 3, 3, 3}));
  EXPECT_EQ(layers::MaxPooling2D(2, {.padding = "same"})->compute_output_shape({{2, 7, 7, 3}}),
            (Shape{2, 4, 4, 3}));
  EXPECT_EQ(layers::AveragePooling2D({3, 2}, {.strides = {1, 2}, .data_format = "channels_first"})
                ->compute_output_shape({{2, 3, 8, 8}}),
            (Shape{2, 3, 6, 4}));
  EXPECT_EQ(pool->count_params(), 0);
  auto gap = layers::GlobalAveragePooling2D();
  EXPECT_EQ(gap->compute_output_shape({{-1, 7, 7, 512}}), (Shape{-1, 512}));
  EXPECT_EQ(layers::GlobalAveragePooling2D({.data_format = "channels_first", .keepdims = true})
                ->compute_output_shape({{4, 16, 5, 5}}),
            (Shape{4, 16, 1, 1}));
}

TEST(Pooling2DTest, PoolingLayersPassTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::MaxPooling2D(2, {.dtype = "float64"}); },
                                  Shape{2, 4, 6, 3}, {.output_shape = {2, 2, 3, 3}, .params = 0});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::AveragePooling2D(3,
                                        {.strides = {2, 2}, .padding = "same", .dtype = "float64"});
      },
      Shape{2, 5, 5, 2}, {.output_shape = {2, 3, 3, 2}, .params = 0});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::MaxPooling2D(2, {.data_format = "channels_first"}); }, Shape{2, 3, 4, 4},
      {.output_shape = {2, 3, 2, 2}, .params = 0});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::GlobalAveragePooling2D({.dtype = "float64"}); }, Shape{2, 3, 4, 5},
      {.output_shape = {2, 5}, .params = 0});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::GlobalAveragePooling2D(
            {.data_format = "channels_first", .keepdims = true, .dtype = "float64"});
      },
      Shape{2, 3, 4, 5}, {.output_shape = {2, 3, 1, 1}, .params = 0});
}

TEST(Pooling2DTest, ForwardMatchesPyTorch) {
  const auto f64 = [](Pooling2DOptions o) {
    o.dtype = "float64";
    return o;
  };
  test::expect_values_near(
      layers::MaxPooling2D(2, f64({}))(Variable(wave({1, 4, 4, 2}, 9))).value(), kMaxPool2);
  const Variable x = Variable(wave({1, 4, 5, 1}, 10));
  const Pooling2DOptions same = f64({.strides = {1, 1}, .padding = "same"});
  test::expect_values_near(layers::MaxPooling2D(3, same)(x).value(), kMaxPool3Same);
  test::expect_values_near(layers::AveragePooling2D(3, same)(x).value(), kAvgPool3Same);
  test::expect_values_near(
      layers::AveragePooling2D(2, f64({.strides = {1, 1}, .data_format = "channels_first"}))(
          Variable(wave({1, 2, 3, 3}, 11)))
          .value(),
      kAvgPool2ChannelsFirst);
  test::expect_values_near(
      layers::GlobalAveragePooling2D({.dtype = "float64"})(Variable(wave({1, 3, 4, 2}, 12)))
          .value(),
      kGlobalAvg);
}

TEST(Pooling2DTest, ConfigUsesKerasFieldNames) {
  auto pool = layers::AveragePooling2D(3, {.padding = "same", .name = "avg"});
  const nlohmann::json c = pool->get_config();
  EXPECT_EQ(c["name"], "avg");
  EXPECT_EQ(c["pool_size"], nlohmann::json::array({3, 3}));
  EXPECT_EQ(c["strides"], nlohmann::json::array({3, 3}));  // Keras writes the resolved strides
  EXPECT_EQ(c["padding"], "same");
  EXPECT_EQ(c["data_format"], "channels_last");
  const nlohmann::json g = layers::GlobalAveragePooling2D({.keepdims = true})->get_config();
  EXPECT_EQ(g["keepdims"], true);
  EXPECT_EQ(g["data_format"], "channels_last");
}

TEST(Pooling2DTest, RejectsBadArguments) {
  EXPECT_EQ(test::value_error([] { layers::MaxPooling2D(2, {.padding = "causal"}); }),
            "MaxPooling2D: padding must be 'valid' or 'same'. Received: padding='causal'");
  EXPECT_EQ(test::value_error([] {
              layers::AveragePooling2D({0, 2});
            }),
            "AveragePooling2D: pool_size must be positive. Received: pool_size=[0, 2]");
  EXPECT_EQ(
      test::value_error([] { layers::GlobalAveragePooling2D({.data_format = "NCHW"}); }),
      "GlobalAveragePooling2D: data_format must be 'channels_last' or 'channels_first'. Received: "
      "data_format='NCHW'");
  auto pool = layers::MaxPooling2D(2, {.name = "pool"});
  EXPECT_EQ(test::value_error([&] {
              pool(Variable(zeros({4, 8})));
            }),
            "pool: expected a 4-D input [batch, height, width, channels]. Received: [4, 8]");
}

}  // namespace
}  // namespace osprey::nn
