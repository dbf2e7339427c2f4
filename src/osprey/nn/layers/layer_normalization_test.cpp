#include "osprey/nn/layers/layer_normalization.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// PyTorch 1.13 references (float64), x = wave([2, 3, 4], 17, 2, 0.2), epsilon 1e-3.
// F.layer_norm(x, [4], wave([4], 18, 0.3, 1), wave([4], 19, 0.2), eps=1e-3):
// [2, 3, 4]
const std::vector<double> kLn = {
    1.670968207885121,   0.8608320503711233,  -0.2928703630402513,  -1.498601355341552,
    2.0548492625679176,  0.49060056198629365, -0.6330646631244685,  -1.1867735328077245,
    -1.2253916753207814, -0.6769411686660652, 0.34030379206741584,  1.5220006224409377,
    -1.6571148243821816, -0.3019341978632482, 0.704428653225026,    1.2226295313969013,
    1.4101270052638437,  1.027271102401392,   -0.09971743389982045, -1.604872341169704,
    1.9610361121661137,  0.6033980056330145,  -0.5399633153759349,  -1.2906689590597333,
};
// Over the last two axes, gamma = wave([3, 4], 20, 0.3, 1), no beta: F.layer_norm(x, [3, 4], gamma,
// None): [2, 3, 4]
const std::vector<double> kLn2 = {
    2.250005298531286,    1.805575047195945,   1.20488816267976,    0.5856632430373377,
    0.05416274005993295,  -0.3409336339777729, -0.6029529239648994, -0.7570678832280482,
    -0.8151736047988658,  -0.757145263754613,  -0.5399749241056463, -0.13019638074854303,
    -0.6234397209875805,  0.1365764742172565,  0.6855411292647382,  0.9632023119771266,
    0.9902564682522141,   0.8350649369761269,  0.5667290096868123,  0.220579720119497,
    -0.20608779536951857, -0.7277280634576301, -1.3308227491941829, -1.9458521813264353,
};

TEST(LayerNormalizationTest, ParameterCountsMatchKeras) {
  // Keras: LayerNormalization() on [None, 128, 512] -> 1024 params.
  auto ln = layers::LayerNormalization();
  EXPECT_EQ(ln->compute_output_shape({{-1, 128, 512}}), (Shape{-1, 128, 512}));
  ln->build({{-1, 128, 512}});
  EXPECT_EQ(ln->count_params(), 1024);
  auto two = layers::LayerNormalization({.axis = {-2, -1}, .center = false});
  two->build({{-1, 3, 4}});
  EXPECT_EQ(two->count_params(), 12);
  EXPECT_EQ(two->gamma().shape(), (Shape{3, 4}));
}

TEST(LayerNormalizationTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::LayerNormalization({.dtype = "float64"}); }, Shape{2, 3, 4},
      {.output_shape = {2, 3, 4}, .params = 8, .weights = {{"gamma", {4}}, {"beta", {4}}}});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::LayerNormalization(
            {.axis = {1, 2}, .epsilon = 1e-5, .scale = false, .dtype = "float64"});
      },
      Shape{2, 3, 2}, {.output_shape = {2, 3, 2}, .params = 6, .weights = {{"beta", {3, 2}}}});
}

TEST(LayerNormalizationTest, ForwardMatchesPyTorch) {
  const Variable x(wave({2, 3, 4}, 17, 2.0, 0.2));
  auto ln = layers::LayerNormalization({.dtype = "float64"});
  ln->build({x.shape()});
  test::set_weight(*ln, "gamma", wave({4}, 18, 0.3, 1.0));
  test::set_weight(*ln, "beta", wave({4}, 19, 0.2));
  test::expect_values_near(ln(x).value(), kLn);
  test::expect_values_near(ln(x, /*training=*/true).value(), kLn);  // no training mode
  auto two = layers::LayerNormalization({.axis = {-2, -1}, .center = false, .dtype = "float64"});
  two->build({x.shape()});
  test::set_weight(*two, "gamma", wave({3, 4}, 20, 0.3, 1.0));
  test::expect_values_near(two(x).value(), kLn2);
}

TEST(LayerNormalizationTest, ConfigUsesKerasFieldNames) {
  const nlohmann::json c = layers::LayerNormalization({.name = "ln"})->get_config();
  EXPECT_EQ(c["axis"], -1);  // a single axis is written as an int, as Keras
  EXPECT_EQ(c["epsilon"], 1e-3);
  EXPECT_EQ(c["center"], true);
  EXPECT_EQ(c["scale"], true);
  EXPECT_EQ(c["beta_initializer"]["class_name"], "Zeros");
  const nlohmann::json c2 = layers::LayerNormalization({.axis = {1, 2}})->get_config();
  EXPECT_EQ(c2["axis"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(LayerNormalization::from_config(c2)->get_config()["axis"], c2["axis"]);
}

TEST(LayerNormalizationTest, RejectsAxesItCannotNormalize) {
  auto ln = layers::LayerNormalization({.axis = {1}, .name = "ln"});
  EXPECT_EQ(test::value_error([&] {
              ln(Variable(zeros({2, 3, 4})));
            }),
            "ln: axis must be a set of trailing axes (such as [-1] or [-2, -1]). Received: "
            "axis=[1] for an input "
            "of shape [2, 3, 4]");
  auto out = layers::LayerNormalization({.axis = {3}, .name = "ln2"});
  EXPECT_EQ(test::value_error([&] {
              out(Variable(zeros({2, 3})));
            }),
            "ln2: axis [3] is out of range for an input of shape [2, 3]");
  auto built = layers::LayerNormalization({.name = "ln3"});
  built(Variable(ones({2, 4})));
  EXPECT_EQ(test::value_error([&] {
              built(Variable(ones({2, 5})));
            }),
            "ln3: the normalized axes must keep the shape the layer was built with ([2, 4]). "
            "Received: [2, 5]");
}

}  // namespace
}  // namespace osprey::nn
