// What Keras writes for a model, read by model_from_config (keras_config.h): the JSON Keras
// 3.15's model.to_json() wrote for an MLP (tests/data/keras3_mnist_mlp.json, made by
// keras3_mnist_mlp.py beside it) builds the same architecture and predicts; Keras 2's and
// Keras 3's variants of the InputLayer; and the exact message for what osprey cannot honour.
#include "osprey/models/keras_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "osprey/io/json.h"
#include "osprey/models/model_config.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/name_scope.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::models {
namespace {

using testing::expect_error;

const std::filesystem::path kFixture =
    std::filesystem::path(OSPREY_SOURCE_DIR) / "tests" / "data" / "keras3_mnist_mlp.json";

nlohmann::json fixture() { return io::read_json_file(kFixture); }

// The message of the ValueError model_from_config throws for `description`.
std::string error_of(const nlohmann::json& description) {
  try {
    model_from_config(description, "keras.json");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

TEST(KerasConfigTest, Keras3SequentialJsonBuildsTheSameMlpAndPredicts) {
  nn::clear_session();
  auto net = model_from_file(kFixture);
  EXPECT_EQ(net->name(), "mnist_mlp");
  ASSERT_TRUE(net->built());
  EXPECT_EQ(net->build_input_shapes().at(0), (Shape{-1, 784}));
  ASSERT_EQ(net->layers().size(), 3u);  // the InputLayer is the model's input shape, not a layer
  const nlohmann::json layers = nn::serialize_layer(*net)["config"]["layers"];
  EXPECT_EQ(layers[0]["class_name"], "Dense");
  EXPECT_EQ(layers[0]["config"]["name"], "dense");
  EXPECT_EQ(layers[0]["config"]["units"], 128);
  EXPECT_EQ(layers[0]["config"]["activation"], "relu");
  EXPECT_EQ(layers[0]["config"]["dtype"], "float32");
  EXPECT_EQ(layers[0]["config"]["kernel_initializer"]["class_name"], "GlorotUniform");
  EXPECT_EQ(layers[0]["config"]["bias_initializer"]["class_name"], "Zeros");
  EXPECT_EQ(layers[0]["config"]["kernel_regularizer"],
            nlohmann::json::parse(R"({"class_name": "L2", "config": {"l2": 0.0001}})"));
  EXPECT_TRUE(layers[0]["config"]["bias_regularizer"].is_null());
  EXPECT_EQ(layers[1]["class_name"], "Dropout");
  EXPECT_DOUBLE_EQ(layers[1]["config"]["rate"].get<double>(), 0.2);
  EXPECT_EQ(layers[2]["config"]["name"], "dense_1");
  EXPECT_EQ(layers[2]["config"]["units"], 10);
  EXPECT_EQ(layers[2]["config"]["activation"], "softmax");
  EXPECT_EQ(net->count_params(), 784 * 128 + 128 + 128 * 10 + 10);
  // The regularizer is live: one penalty, 1e-4 * sum(kernel^2).
  const std::vector<autograd::Variable> penalties = net->regularization_losses();
  ASSERT_EQ(penalties.size(), 1u);
  double sum_squares = 0;
  for (float w : net->get_weights()[0].to_vector<float>()) sum_squares += double(w) * w;
  EXPECT_NEAR(penalties[0].value().item(), 1e-4 * sum_squares, 1e-6 * sum_squares * 1e-4);

  const Tensor x = random_uniform({5, 784}, {.seed = 3});
  const Tensor y = (*net)(autograd::Variable(x)).value();
  EXPECT_EQ(y.shape(), (Shape{5, 10}));
  const std::vector<float> p = y.to_vector<float>();
  for (int row = 0; row < 5; ++row) {
    double total = 0;
    for (int k = 0; k < 10; ++k) total += p[row * 10 + k];
    EXPECT_NEAR(total, 1.0, 1e-5);  // softmax rows
  }
}

TEST(KerasConfigTest, TheRewriteGivesOspreysOwnDescription) {
  const nlohmann::json m = from_keras_config(fixture(), "");
  EXPECT_FALSE(m.contains("module"));
  EXPECT_FALSE(m.contains("registered_name"));
  EXPECT_FALSE(m.contains("build_config"));
  EXPECT_EQ(m["config"]["dtype"], "float32");
  EXPECT_EQ(m["config"]["build_input_shape"], nlohmann::json::parse("[null, 784]"));
  ASSERT_EQ(m["config"]["layers"].size(), 4u);  // the InputLayer stays; Sequential passes over it
  EXPECT_EQ(m["config"]["layers"][0]["class_name"], "InputLayer");
  EXPECT_EQ(m["config"]["layers"][1]["config"]["dtype"], "float32");
  EXPECT_FALSE(m["config"]["layers"][1].contains("build_config"));
  // osprey's own description is a fixed point.
  nn::clear_session();
  const nlohmann::json own = nn::serialize_layer(*model_from_config(fixture(), "keras.json"));
  EXPECT_EQ(from_keras_config(own, ""), own);
}

TEST(KerasConfigTest, TheInputShapeComesFromKeras2And3Keys) {
  for (const auto& [key, shape] :
       std::vector<std::pair<std::string, std::string>>{{"batch_shape", "[null, 784]"},
                                                        {"batch_input_shape", "[null, 784]"},
                                                        {"input_shape", "[784]"}}) {
    nlohmann::json d = fixture();
    d["config"].erase("build_input_shape");
    d.erase("build_config");
    nlohmann::json& input = d["config"]["layers"][0]["config"];
    input.erase("batch_shape");
    input[key] = nlohmann::json::parse(shape);
    nn::clear_session();
    auto net = model_from_config(d, "keras.json");
    EXPECT_EQ(net->build_input_shapes().at(0), (Shape{-1, 784})) << key;
  }
  // Without an InputLayer, the model's build_config gives the shape.
  nlohmann::json d = fixture();
  d["config"]["layers"].erase(0);
  d["config"].erase("build_input_shape");
  d["build_config"]["input_shape"] = nlohmann::json::parse("[null, 32]");
  nn::clear_session();
  EXPECT_EQ(model_from_config(d, "keras.json")->build_input_shapes().at(0), (Shape{-1, 32}));
}

TEST(KerasConfigTest, WhatOspreyCannotHonourIsRefusedNamingTheField) {
  nlohmann::json d = fixture();
  d["config"]["layers"][0]["config"]["sparse"] = true;
  EXPECT_EQ(error_of(d),
            "keras.json: layers[0] (InputLayer): sparse: osprey has no sparse inputs. "
            "Received: true");

  d = fixture();
  d["config"]["layers"][1]["config"]["kernel_constraint"] = nlohmann::json::parse(
      R"({"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 2},
          "registered_name": null})");
  EXPECT_EQ(error_of(d),
            "keras.json: layers[1] (Dense): kernel_constraint: osprey has no weight constraints. "
            "Received: {\"class_name\":\"MaxNorm\",\"config\":{\"max_value\":2},\"module\":"
            "\"keras.constraints\",\"registered_name\":null}");

  d = fixture();
  d["config"]["layers"][3]["config"]["dtype"] = nlohmann::json::parse(
      R"({"module": "keras", "class_name": "QuantizedDTypePolicy",
          "config": {"mode": "int8", "source_name": "float32"}, "registered_name": null})");
  EXPECT_EQ(error_of(d),
            "keras.json: layers[3] (Dense): dtype: Keras's QuantizedDTypePolicy cannot be read: "
            "osprey reads the float policies (DTypePolicy, e.g. float32 or mixed_float16) and "
            "quantizes a trained model (osprey quantize). Received: " +
                d["config"]["layers"][3]["config"]["dtype"].dump());

  d = fixture();
  d["config"]["dtype"]["config"]["name"] = "float64x";
  expect_error<ValueError>([&] { model_from_config(d, "keras.json"); },
                           {"keras.json: mnist_mlp: unknown dtype policy 'float64x'. Valid "
                            "policies: "});

  d = fixture();
  d["config"]["layers"].push_back(d["config"]["layers"][0]);
  EXPECT_EQ(error_of(d),
            "keras.json: layers[4] (InputLayer): only a Sequential's first layer may be an "
            "InputLayer (it gives the model's input shape)");

  d = fixture();
  d["config"]["build_input_shape"] = nlohmann::json::parse("[null, 10]");
  EXPECT_EQ(error_of(d),
            "keras.json: config.build_input_shape: [null,10] disagrees with the InputLayer's "
            "shape [null,784]");

  d = fixture();
  d["config"]["layers"][1]["config"]["kernel_regularizer"]["class_name"] = "OrthogonalRegularizer";
  EXPECT_EQ(error_of(d),
            "keras.json: layers[1]: unknown regularizer class 'OrthogonalRegularizer'. Known: L1, "
            "L2, L1L2");
}

TEST(KerasConfigTest, Keras3sFunctionalLayoutIsReadAndANonTensorArgumentIsNamed) {
  const nlohmann::json d = nlohmann::json::parse(R"({
    "module": "keras.src.models.functional", "class_name": "Functional", "registered_name": null,
    "config": {"name": "f", "trainable": true, "layers": [
      {"module": "keras.layers", "class_name": "InputLayer", "name": "input_layer",
       "config": {"batch_shape": [null, 4], "dtype": "float32", "sparse": false,
                  "name": "input_layer"}, "registered_name": null, "inbound_nodes": []},
      {"module": "keras.layers", "class_name": "Dense", "name": "dense",
       "config": {"name": "dense", "units": 2}, "registered_name": null,
       "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {
         "shape": [null, 4], "dtype": "float32", "keras_history": ["input_layer", 0, 0]}}],
         "kwargs": {}}]}],
      "input_layers": [["input_layer", 0, 0]], "output_layers": [["dense", 0, 0]]}})");
  // The calls become the references osprey's functional configs hold (seq2seq_test.cpp reads
  // Keras's LSTM seq2seq, initial_state and all).
  const nlohmann::json read = from_keras_config(d, "");
  EXPECT_EQ(read["config"]["layers"][1]["inbound_nodes"],
            nlohmann::json::parse(R"([[["input_layer", 0, 0]]])"));
  const std::shared_ptr<Network> m = model_from_config(d, "keras.json");
  EXPECT_EQ(m->layers().size(), 1u);
  EXPECT_EQ(m->compute_output_shape({{-1, 4}}), (Shape{-1, 2}));
  nlohmann::json bad = d;
  bad["config"]["layers"][1]["inbound_nodes"][0]["args"][0] = 1.5;
  EXPECT_EQ(error_of(bad),
            "keras.json: layers[1] (Dense): inbound_nodes[0].args: osprey reads Keras tensors "
            "here ({\"class_name\": \"__keras_tensor__\", \"config\": {\"keras_history\": "
            "[layer, node, tensor]}}). Received: 1.5");
}

TEST(KerasConfigTest, AnUnknownClassIsNamedWithItsPlace) {
  nlohmann::json d = fixture();
  d["config"]["layers"][2]["class_name"] = "GaussianNoise";
  expect_error<ValueError>([&] { model_from_config(d, "keras.json"); },
                           {"keras.json: layers[2]: unknown layer class 'GaussianNoise'. "
                            "Registered layers: "});
  d = fixture();
  d["config"]["layers"][1]["config"]["kernel_initializer"]["class_name"] = "Identity";
  expect_error<ValueError>([&] { model_from_config(d, "keras.json"); },
                           {"keras.json: layers[1]: unknown initializer class 'Identity'"});
}

}  // namespace
}  // namespace osprey::models
