#include "osprey/nn/layers/activation.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

TEST(ActivationTest, AppliesTheNamedActivation) {
  // float64 layers: a default (float32) layer would cast these float64 inputs, as Keras does.
  const Variable x(from_vector<double>({-1.0, 0.5, 2.0}, {1, 3}));
  EXPECT_EQ(layers::Activation("relu", {.dtype = "float64"})(x).value().to_vector<double>(),
            (std::vector<double>{0.0, 0.5, 2.0}));
  const auto p = layers::Activation("softmax", {.dtype = "float64"})(x).value().to_vector<double>();
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-12);
  EXPECT_NEAR(layers::Activation("tanh", {.dtype = "float64"})(x).value().at({0, 2}),
              std::tanh(2.0), 1e-7);
  EXPECT_TRUE(layers::Activation("linear", {.dtype = "float64"})(x).is_same(x));
}

TEST(ActivationTest, IsNamedAndRegisteredAsKerasActivation) {
  clear_session();
  auto a = layers::Activation("gelu");
  EXPECT_EQ(a->name(), "activation");
  EXPECT_EQ(a->class_name(), "Activation");
  const nlohmann::json saved = serialize_layer(*a);
  EXPECT_EQ(saved["class_name"], "Activation");
  EXPECT_EQ(saved["config"]["activation"], "gelu");
  EXPECT_EQ(layer_from_config("Activation", saved["config"])->get_config(), saved["config"]);
}

TEST(ActivationTest, PassesTheLayerConformanceCheck) {
  for (const char* name : {"relu", "gelu", "sigmoid", "tanh", "softmax", "linear"}) {
    SCOPED_TRACE(name);
    OSPREY_EXPECT_LAYER_CONFORMANCE([&] { return layers::Activation(name, {.dtype = "float64"}); },
                                    Shape{2, 5}, {.output_shape = {2, 5}, .params = 0});
  }
}

TEST(ActivationTest, RejectsAnUnknownName) {
  EXPECT_EQ(
      test::value_error([] { layers::Activation("swishy"); }),
      "unknown activation 'swishy'. Expected one of: relu, gelu, sigmoid, tanh, silu (or swish), "
      "softmax, linear");
}

}  // namespace
}  // namespace osprey::nn
