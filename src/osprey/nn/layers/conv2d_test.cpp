#include "osprey/nn/layers/conv2d.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// PyTorch 1.13 references (float64), from inputs made by test::wave:
//   conv2d(x.permute(0, 3, 1, 2), kernel.permute(3, 2, 0, 1), bias, ...).permute(0, 2, 3, 1)
// [2, 3, 3, 4]
const std::vector<double> kConvValid = {
    -0.03743515525705754, 0.4596222114683782,  0.8944718680568355, 1.208258953461025,
    0.6803141273509599,   0.960684850224154,   1.1110313853958718, 1.1110050346381035,
    1.0023613065128947,   1.110254700392014,   1.067880329013323,  0.8809733647557654,
    -0.3308442101348043,  0.20927002283286777, 0.7210605399401694, 1.1352588956144778,
    0.20031625025687205,  0.6363007045523564,  0.9861648435082241, 1.2025561972036716,
    0.8688971932677299,   1.072124596584757,   1.1302449653178832, 1.035391980214056,
    -0.2877020516007906,  0.1824405349216932,  0.6278906509097663, 0.988358712865402,
    -0.21609755485658105, 0.3159851526361659,  0.8053007520729702, 1.1856226725533077,
    0.4554286463858509,   0.8140900861939143,  1.0625682519048683, 1.1672327894535075,
    0.9259319238720267,   1.0267771428570016,  0.9886528923856048, 0.816719110910195,
    0.30622305716813525,  0.5520958003654259,  0.7232449669817383, 0.7965063202125882,
    -0.2936935779502379,  0.17973211573491904, 0.6288319107168262, 0.9928222565670602,
    0.9845594012127261,   1.1244087266898812,  1.1120746058493487, 0.9492264040849187,
    0.7664362116487644,   0.8922104804628989,  0.8972282462949531, 0.7808103780789604,
    0.05695710330074816,  0.38457235093856623, 0.6601375349873042, 0.8463562005206802,
    0.7037428129624154,   0.975266717316205,   1.11479284666424,   1.1034369939459274,
    0.9993003602708206,   1.1048798988925776,  1.0609191264251392, 0.8733679271926665,
    0.5448651425931593,   0.7228461726392792,  0.8029933642433614, 0.7744591710092636,
};
// "same" with stride 2 pads TensorFlow's way (bottom/right): F.pad(x, (0, 1, 0, 1)) first.
// [1, 3, 3, 3]
const std::vector<double> kConvSameStride2Relu = {
    0.0,
    0.0,
    0.0,
    0.060196348851352374,
    0.1604270670197573,
    0.23894473426442997,
    0.0,
    0.0,
    0.0,
    0.2325470947170291,
    0.2835895804969371,
    0.29624954693544836,
    0.06739014952400048,
    0.0,
    0.0,
    0.01933351020294735,
    0.006265297854505983,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.3505793361495337,
    0.24776303100975516,
    0.11141316193172829,
};
// channels_first, groups=2, dilation 2 (no permutes: NCHW is PyTorch's layout).
// [1, 4, 3, 3]
const std::vector<double> kConvGroupedDilated = {
    0.9520600354538459, 0.8917424596918786, 0.8150476169230496, 0.5466806012451672,
    0.5684036781301395, 0.617511875241837,  0.971074551154405,  0.9943894295702342,
    0.9874342551448687, 1.0592519629948345, 0.9867177703646558, 0.9090765727596142,
    0.7607699903281491, 0.8080323624733492, 0.8743719613506307, 1.1593186799693527,
    1.1513470003600774, 1.1159865218066858, 1.202897969961562,  1.1881695108120436,
    1.147809388573502,  0.8236252877598289, 0.7975801833792131, 0.7987678490402448,
    1.0930534913910868, 1.1521467115662958, 1.1904837855398005, 1.1011357528798844,
    1.0557393150293952, 0.9910797270284455, 0.7061543283057852, 0.7124503641638542,
    0.7459457989298464, 1.078732268338383,  1.1134041522700044, 1.1210082208486278,
};

TEST(Conv2DTest, ShapeAndParameterCountMatchKeras) {
  auto conv = layers::Conv2D(32, 3);
  const Variable y = conv(Variable(zeros({2, 28, 28, 1})));
  EXPECT_EQ(y.shape(), (Shape{2, 26, 26, 32}));
  EXPECT_EQ(conv->count_params(), 320);
  EXPECT_EQ(conv->kernel().shape(), (Shape{3, 3, 1, 32}));
  EXPECT_EQ(conv->kernel().name(), conv->name() + "/kernel");
  // Keras: Conv2D(64, 3, strides=2, padding="same") on 28x28x32 -> 14x14x64, 18496 params.
  auto strided = layers::Conv2D(64, 3, {.strides = {2, 2}, .padding = "same"});
  EXPECT_EQ(strided->compute_output_shape({{-1, 28, 28, 32}}), (Shape{-1, 14, 14, 64}));
  strided->build({{-1, 28, 28, 32}});
  EXPECT_EQ(strided->count_params(), 18496);
  // Grouped, channels_first: kernel [3, 3, 16 / 4, 8].
  auto grouped =
      layers::Conv2D(8, {3, 3}, {.data_format = "channels_first", .groups = 4, .use_bias = false});
  EXPECT_EQ(grouped->compute_output_shape({{5, 16, 9, 9}}), (Shape{5, 8, 7, 7}));
  grouped->build({{5, 16, 9, 9}});
  EXPECT_EQ(grouped->count_params(), 3 * 3 * 4 * 8);
}

TEST(Conv2DTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Conv2D(3, 2, {.padding = "same", .activation = "tanh", .dtype = "float64"});
      },
      Shape{2, 4, 4, 2},
      {.output_shape = {2, 4, 4, 3},
       .params = 27,
       .weights = {{"kernel", {2, 2, 2, 3}}, {"bias", {3}}}});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Conv2D(4, 3,
                              {.strides = {2, 1},
                               .data_format = "channels_first",
                               .groups = 2,
                               .kernel_regularizer = Regularizer::l2(0.01)});
      },
      Shape{2, 2, 7, 5},
      {.output_shape = {2, 4, 3, 3},
       .params = 40,
       .weights = {{"kernel", {3, 3, 1, 4}}, {"bias", {4}}}});
}

TEST(Conv2DTest, ForwardMatchesPyTorchValidWithBias) {
  auto conv = layers::Conv2D(4, 3, {.dtype = "float64"});
  conv->build({{2, 5, 5, 3}});
  test::set_weight(*conv, "kernel", wave({3, 3, 3, 4}, 2, 0.3));
  test::set_weight(*conv, "bias", wave({4}, 3));
  test::expect_values_near(conv(Variable(wave({2, 5, 5, 3}, 1))).value(), kConvValid);
}

TEST(Conv2DTest, ForwardMatchesPyTorchSameStride2WithRelu) {
  auto conv = layers::Conv2D(3, 3,
                             {.strides = {2, 2},
                              .padding = "same",
                              .activation = "relu",
                              .use_bias = false,
                              .dtype = "float64"});
  conv->build({{1, 6, 6, 2}});
  test::set_weight(*conv, "kernel", wave({3, 3, 2, 3}, 5, 0.3));
  const Variable y = conv(Variable(wave({1, 6, 6, 2}, 4)));
  EXPECT_EQ(y.shape(), (Shape{1, 3, 3, 3}));
  test::expect_values_near(y.value(), kConvSameStride2Relu);
}

TEST(Conv2DTest, ForwardMatchesPyTorchGroupedDilatedChannelsFirst) {
  auto conv = layers::Conv2D(
      4, 3,
      {.data_format = "channels_first", .dilation_rate = {2, 2}, .groups = 2, .dtype = "float64"});
  conv->build({{1, 4, 7, 7}});
  test::set_weight(*conv, "kernel", wave({3, 3, 2, 4}, 7, 0.3));
  test::set_weight(*conv, "bias", wave({4}, 8));
  test::expect_values_near(conv(Variable(wave({1, 4, 7, 7}, 6))).value(), kConvGroupedDilated);
}

TEST(Conv2DTest, ConfigUsesKerasFieldNames) {
  auto conv = layers::Conv2D(
      8, {3, 5}, {.strides = {2, 2}, .padding = "same", .activation = "relu", .name = "stem"});
  const nlohmann::json c = conv->get_config();
  EXPECT_EQ(c["name"], "stem");
  EXPECT_EQ(c["filters"], 8);
  EXPECT_EQ(c["kernel_size"], nlohmann::json::array({3, 5}));
  EXPECT_EQ(c["strides"], nlohmann::json::array({2, 2}));
  EXPECT_EQ(c["padding"], "same");
  EXPECT_EQ(c["data_format"], "channels_last");
  EXPECT_EQ(c["dilation_rate"], nlohmann::json::array({1, 1}));
  EXPECT_EQ(c["groups"], 1);
  EXPECT_EQ(c["activation"], "relu");
  EXPECT_EQ(c["kernel_initializer"]["class_name"], "GlorotUniform");
  EXPECT_TRUE(c["kernel_regularizer"].is_null());
  // Keras writes kernel_size 3 as [3, 3]; a bare int is read too.
  nlohmann::json keras = c;
  keras["kernel_size"] = 3;
  auto back = std::dynamic_pointer_cast<Conv2D>(layer_from_config("Conv2D", keras));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->kernel_size(), (std::array<int64_t, 2>{3, 3}));
}

TEST(Conv2DTest, RejectsBadArgumentsWithKerasStyleMessages) {
  EXPECT_EQ(test::value_error([] { layers::Conv2D(0, 3); }),
            "Conv2D: filters must be positive. Received: filters=0");
  EXPECT_EQ(test::value_error([] { layers::Conv2D(8, 3, {.padding = "full"}); }),
            "Conv2D: padding must be 'valid' or 'same'. Received: padding='full'");
  EXPECT_EQ(test::value_error([] { layers::Conv2D(8, 3, {.data_format = "NHWC"}); }),
            "Conv2D: data_format must be 'channels_last' or 'channels_first'. Received: "
            "data_format='NHWC'");
  EXPECT_EQ(test::value_error([] {
              layers::Conv2D(8, {3, 0});
            }),
            "Conv2D: kernel_size must be positive. Received: kernel_size=[3, 0]");
  EXPECT_EQ(test::value_error([] { layers::Conv2D(6, 3, {.groups = 4}); }),
            "Conv2D: filters must be divisible by groups. Received: filters=6, groups=4");
  auto conv = layers::Conv2D(8, 3, {.name = "c"});
  EXPECT_EQ(test::value_error([&] {
              conv(Variable(zeros({2, 28, 28})));
            }),
            "c: expected a 4-D input [batch, height, width, channels]. Received: [2, 28, 28]");
  auto grouped = layers::Conv2D(8, 3, {.groups = 2, .name = "g"});
  EXPECT_EQ(
      test::value_error([&] {
        grouped(Variable(zeros({1, 5, 5, 3})));
      }),
      "g: input channels must be divisible by groups=2. Received: 3 channels in [1, 5, 5, 3]");
}

}  // namespace
}  // namespace osprey::nn
