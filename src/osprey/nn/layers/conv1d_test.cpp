#include "osprey/nn/layers/conv1d.h"

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
// [2, 5, 4]
const std::vector<double> kConv1dValid = {
    0.3475423644634714,   0.6286324869668296,  0.8246401514075375, 0.909036639917066,
    0.7248898461570819,   1.0222852560118763,  1.1813191522223934, 1.180467042998274,
    0.65702600026073,     0.9960270846325097,  1.2002205756735589, 1.2419698422864418,
    0.21932563727072507,  0.5790223189626378,  0.8603510460994483, 1.0252352952359092,
    -0.10206753140398545, 0.23442854715943373, 0.539195821618854,  0.7709854711041076,
    0.7603362346886786,   1.0712249580660431,  1.23712840871262,   1.2355923328716656,
    0.5298193846738211,   0.8802965754666809,  1.1116297544280442, 1.1925090610184916,
    0.0707514754862199,   0.4271608094305359,  0.7257559317203737, 0.9261233933268442,
    -0.10699134007252797, 0.21510511799880322, 0.5080881074527233, 0.732303755111978,
    0.1940057892024843,   0.4796548732634571,  0.700384920390952,  0.8263211541977226,
};
// [2, 7, 3]
const std::vector<double> kConv1dValidDx = {
    0.712088310395001,   0.7817632445291534,   -0.5703208237391059, -0.9353451303364444,
    0.6184558194539442,  1.0474979179550337,   -1.1496832787600342, -1.8691279248856476,
    0.8107295481980629,  0.9234618551023848,   -0.9181631321580257, -1.0899645405343976,
    1.3171468518259506,  1.7026252394536339,   -1.0083872591955603, -0.8933605147592062,
    0.7597518390184186,  1.0311363816262988,   -0.2829242120049736, -0.918466499347796,
    0.11636651298114856, 0.2087543490830417,   0.4671708857699973,  -0.12403606285264956,
    -1.158371346141257,  -0.5616645870083523,  1.0565172651250112,  0.4232369464955391,
    -1.4953345048284863, -0.6944057638362043,  1.5180467210903599,  1.2089622690154822,
    -1.2988095753949764, -0.14794942206757566, 1.7145716505238693,  0.45887541569447865,
    -1.0158853633900033, -0.5260261178094118,  0.9204940781651358,  -0.05154728838655049,
    -0.766335639653273,  -0.0874225062779656,
};
// [3, 3, 4]
const std::vector<double> kConv1dValidDkernel = {
    0.5635784427182878, -0.9852111131899914, -2.4006569667622712, -3.4911851618742116,
    2.0727685310275072, 0.6014762791232906,  -0.9512229655074853, -2.375178644145478,
    3.301419122458902,  2.1067566787100134,  0.6269546017400802,  -0.9377028393983775,
    4.083238123322716,  3.3268974450756943,  2.120276804819122,   0.6266866456984178,
    4.312409999530763,  4.096758249431824,   3.3266294890340307,  2.106257033219888,
    3.9579174127321597, 4.312142043489102,   4.082738477832591,   3.3007554121934604,
    3.0677392715501908, 3.943897641132926,   4.286267966648532,   4.048512030670275,
    1.7623570113793972, 3.0418651947096187,  3.909671193970608,   4.248321538224364,
    0.2184479973088856, 1.7281305642170808,  3.0039187662854543,  3.8731406553570604,
};
// [1, 8, 3]
const std::vector<double> kConv1dCausalDilatedRelu = {
    0.0,
    0.0,
    0.04769582121762772,
    0.0,
    0.0,
    0.012774704386105203,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.3394999228331191,
    0.1232760932226439,
    0.0,
    0.7677551813414376,
    0.6064111408389743,
    0.3629921972272182,
    0.7944262016116506,
    0.772355029123201,
    0.6457492267241601,
    0.4055623629009157,
    0.5343086695293442,
    0.5907388042922549,
};
// [1, 4, 5]
const std::vector<double> kConv1dSameStride2Grouped = {
    0.700565647626551,  0.6825554781435935, 0.7584118600409515, 0.8407160479553193,
    0.7300257729123995, 0.906440398218787,  0.9856695119205946, 1.0365771920158493,
    1.0416684485662602, 0.9562392511017802, 0.9625292582055109, 1.1771457142833228,
    1.1474592850983,    1.0400093369234293, 1.022389068942547,  0.8991632943935899,
    1.1788584783938396, 1.0939041414210833, 0.9145417767477138, 0.9736939879817137,
};

TEST(Conv1DTest, ShapeAndParameterCountMatchKeras) {
  // Keras: Conv1D(32, 3) on (100, 16) -> (98, 32), 3 * 16 * 32 + 32 = 1568 parameters.
  auto conv = layers::Conv1D(32, 3);
  EXPECT_EQ(conv->compute_output_shape({{-1, 100, 16}}), (Shape{-1, 98, 32}));
  const Variable y = conv(Variable(zeros({2, 100, 16})));
  EXPECT_EQ(y.shape(), (Shape{2, 98, 32}));
  EXPECT_EQ(conv->count_params(), 1568);
  EXPECT_EQ(conv->kernel().shape(), (Shape{3, 16, 32}));
  // causal and same keep the length; strides 2 with same halves it (rounding up).
  EXPECT_EQ(layers::Conv1D(8, 5, {.padding = "causal", .dilation_rate = 4})
                ->compute_output_shape({{-1, 100, 16}}),
            (Shape{-1, 100, 8}));
  EXPECT_EQ(layers::Conv1D(8, 3, {.strides = 2, .padding = "same"})
                ->compute_output_shape({{-1, 101, 16}}),
            (Shape{-1, 51, 8}));
  EXPECT_EQ(layers::Conv1D(8, 3, {.data_format = "channels_first", .groups = 4})
                ->compute_output_shape({{5, 16, 9}}),
            (Shape{5, 8, 7}));
}

TEST(Conv1DTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Conv1D(3, 2,
                              {.padding = "causal", .activation = "tanh", .dtype = "float64"});
      },
      Shape{2, 5, 2},
      {.output_shape = {2, 5, 3}, .params = 15, .weights = {{"kernel", {2, 2, 3}}, {"bias", {3}}}});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Conv1D(4, 3,
                              {.strides = 2,
                               .padding = "same",
                               .data_format = "channels_first",
                               .dilation_rate = 1,
                               .groups = 2,
                               .kernel_regularizer = Regularizer::l2(0.01),
                               .dtype = "float64"});
      },
      Shape{2, 2, 7},
      {.output_shape = {2, 4, 4}, .params = 16, .weights = {{"kernel", {3, 1, 4}}, {"bias", {4}}}});
}

TEST(Conv1DTest, ForwardAndGradientsMatchPyTorchValidWithBias) {
  auto conv = layers::Conv1D(4, 3, {.dtype = "float64"});
  conv->build({{2, 7, 3}});
  test::set_weight(*conv, "kernel", wave({3, 3, 4}, 2, 0.3));
  test::set_weight(*conv, "bias", wave({4}, 3));
  Variable x(wave({2, 7, 3}, 1), /*requires_grad=*/true);
  const Variable y = conv(x);
  test::expect_values_near(y.value(), kConv1dValid);
  autograd::sum(autograd::mul(y, Variable(wave({2, 5, 4}, 9)))).backward();
  test::expect_values_near(x.grad(), kConv1dValidDx);
  test::expect_values_near(conv->kernel().grad(), kConv1dValidDkernel);
}

TEST(Conv1DTest, CausalDilatedOutputSeesOnlyThePast) {
  auto conv = layers::Conv1D(3, 3,
                             {.padding = "causal",
                              .dilation_rate = 2,
                              .activation = "relu",
                              .use_bias = false,
                              .dtype = "float64"});
  conv->build({{1, 8, 2}});
  test::set_weight(*conv, "kernel", wave({3, 2, 3}, 5, 0.3));
  const Tensor x = wave({1, 8, 2}, 4);
  const Tensor y = conv(Variable(x)).value();
  test::expect_values_near(y, kConv1dCausalDilatedRelu);
  // Changing the last step leaves every earlier output as it was.
  std::vector<double> changed = x.to_vector<double>();
  changed[14] += 5.0;
  changed[15] -= 3.0;
  const std::vector<double> y2 =
      conv(Variable(from_vector<double>(changed, x.shape()))).value().to_vector<double>();
  const std::vector<double> y1 = y.to_vector<double>();
  for (size_t i = 0; i < 7 * 3; ++i) EXPECT_EQ(y2[i], y1[i]) << "output " << i;
}

TEST(Conv1DTest, ForwardMatchesPyTorchSameStride2GroupedChannelsFirst) {
  auto conv = layers::Conv1D(4, 3,
                             {.strides = 2,
                              .padding = "same",
                              .data_format = "channels_first",
                              .groups = 2,
                              .dtype = "float64"});
  conv->build({{1, 4, 9}});
  test::set_weight(*conv, "kernel", wave({3, 2, 4}, 7, 0.3));
  test::set_weight(*conv, "bias", wave({4}, 8));
  test::expect_values_near(conv(Variable(wave({1, 4, 9}, 6))).value(), kConv1dSameStride2Grouped);
}

TEST(Conv1DTest, ConfigUsesKerasFieldNamesAndRoundTrips) {
  auto conv = layers::Conv1D(
      8, 5, {.strides = 2, .padding = "causal", .dilation_rate = 1, .name = "wavenet_1"});
  const nlohmann::json c = conv->get_config();
  EXPECT_EQ(c["filters"], 8);
  EXPECT_EQ(c["kernel_size"], nlohmann::json::array({5}));
  EXPECT_EQ(c["strides"], nlohmann::json::array({2}));
  EXPECT_EQ(c["padding"], "causal");
  EXPECT_EQ(c["dilation_rate"], nlohmann::json::array({1}));
  // Keras's own config (1-tuples) and bare ints both read back.
  nlohmann::json keras = c;
  keras["kernel_size"] = 5;
  keras["strides"] = nlohmann::json::array({2});
  auto back = std::dynamic_pointer_cast<Conv1D>(layer_from_config("Conv1D", keras));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->kernel_size(), 5);
  EXPECT_EQ(back->options().strides, 2);
  EXPECT_EQ(back->options().padding, "causal");
  EXPECT_EQ(test::value_error([&] {
              nlohmann::json bad = c;
              bad["kernel_size"] = nlohmann::json::array({3, 3});
              layer_from_config("Conv1D", bad);
            }),
            "config field 'kernel_size' must be an int or a list of one int. Received: [3,3]");
}

TEST(Conv1DTest, RejectsBadArgumentsWithKerasStyleMessages) {
  EXPECT_EQ(test::value_error([] { layers::Conv1D(0, 3); }),
            "Conv1D: filters must be positive. Received: filters=0");
  EXPECT_EQ(test::value_error([] { layers::Conv1D(8, 0); }),
            "Conv1D: kernel_size must be positive. Received: kernel_size=0");
  EXPECT_EQ(test::value_error([] { layers::Conv1D(8, 3, {.padding = "full"}); }),
            "Conv1D: padding must be 'valid', 'same' or 'causal'. Received: padding='full'");
  EXPECT_EQ(test::value_error([] { layers::Conv1D(8, 3, {.dilation_rate = 0}); }),
            "Conv1D: dilation_rate must be positive. Received: dilation_rate=0");
  EXPECT_EQ(test::value_error([] { layers::Conv1D(6, 3, {.groups = 4}); }),
            "Conv1D: filters must be divisible by groups. Received: filters=6, groups=4");
  auto conv = layers::Conv1D(8, 3, {.name = "c"});
  EXPECT_EQ(test::value_error([&] {
              conv(Variable(zeros({2, 28, 28, 1})));
            }),
            "c: expected a 3-D input [batch, steps, channels]. Received: [2, 28, 28, 1]");
  auto grouped = layers::Conv1D(8, 3, {.groups = 2, .name = "g"});
  EXPECT_EQ(test::value_error([&] {
              grouped(Variable(zeros({2, 10, 3})));
            }),
            "g: input channels must be divisible by groups=2. Received: 3 channels in [2, 10, 3]");
}

}  // namespace
}  // namespace osprey::nn
