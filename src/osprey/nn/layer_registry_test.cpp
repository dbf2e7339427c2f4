#include "osprey/nn/layer_registry.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/all.h"
#include "osprey/nn/layers/layer_test_helpers.h"

namespace osprey::nn {
namespace {

TEST(LayerRegistryTest, EveryBuiltInLayerRoundTripsThroughItsConfig) {
  const std::vector<std::shared_ptr<Layer>> all = {layers::Activation("relu"),
                                                   layers::Add(),
                                                   layers::AveragePooling1D(3),
                                                   layers::AveragePooling2D(3),
                                                   layers::BatchNormalization(),
                                                   layers::Concatenate(1),
                                                   layers::Conv1D(4, 3),
                                                   layers::Conv2D(4, 3),
                                                   layers::Dense(3),
                                                   layers::Dropout(0.1),
                                                   layers::Embedding(10, 2),
                                                   layers::Flatten(),
                                                   layers::GlobalAveragePooling1D(),
                                                   layers::GlobalAveragePooling2D(),
                                                   layers::GlobalMaxPooling1D(),
                                                   layers::LayerNormalization(),
                                                   layers::Masking(-1.0),
                                                   layers::MaxPooling1D(),
                                                   layers::MaxPooling2D(),
                                                   layers::MultiHeadAttention(2, 4),
                                                   layers::RandomCrop(2, 2),
                                                   layers::RandomFlip(),
                                                   layers::RandomTranslation(0.1, 0.1),
                                                   layers::RandomZoom(0.1),
                                                   layers::Reshape({2, -1}),
                                                   layers::RMSNormalization(),
                                                   layers::LSTM(3),
                                                   layers::GRU(3),
                                                   layers::SimpleRNN(3),
                                                   layers::PositionEmbedding(4),
                                                   layers::TransformerEncoder(8, 2),
                                                   layers::TransformerDecoder(8, 2),
                                                   layers::Bidirectional(layers::LSTM(3)),
                                                   layers::TimeDistributed(layers::Dense(3)),
                                                   layers::GroupedQueryAttention(4, 2, 1),
                                                   layers::RotaryEmbedding()};
  std::set<std::string> classes;
  for (const auto& [name, factory] : builtin_layer_factories()) classes.insert(name);
  classes.erase("GroupQueryAttention");  // Keras's exported name of GroupedQueryAttention
  EXPECT_EQ(classes.size(), all.size());
  for (const auto& layer : all) {
    SCOPED_TRACE(layer->class_name());
    EXPECT_TRUE(classes.count(layer->class_name()));
    const nlohmann::json saved = serialize_layer(*layer);
    EXPECT_EQ(saved["class_name"], layer->class_name());
    const auto back = layer_from_config(saved["class_name"], saved["config"]);
    EXPECT_EQ(back->class_name(), layer->class_name());
    EXPECT_EQ(back->get_config(), saved["config"]);
  }
}

TEST(LayerRegistryTest, UnknownClassesNameTheRegisteredOnes) {
  const std::string msg =
      test::value_error([] { layer_from_config("Conv3D", nlohmann::json::object()); });
  EXPECT_EQ(
      msg.rfind(
          "unknown layer class 'Conv3D'. Registered layers: Activation, Add, AveragePooling1D, ",
          0),
      0u)
      << msg;
}

// Issue 27 (found by fuzz_model_config): a float past an integer field's range, or a negative
// seed, is refused before the layer reads it (a plain cast would be undefined behaviour).
TEST(LayerRegistryTest, NumbersPastAnIntegerFieldsRangeAreRefusedBeforeTheLayerReadsThem) {
  EXPECT_EQ(test::value_error(
                [] { layer_from_config("Dense", nlohmann::json::parse(R"({"units": 1.1e81})")); }),
            "Dense config: units is 1.1e+81, past the +-2.14748e+09 a number here may take");
  EXPECT_EQ(test::value_error([] {
              layer_from_config(
                  "Conv2D", nlohmann::json::parse(R"({"filters": 2, "kernel_size": [3, -4e9]})"));
            }),
            "Conv2D config: kernel_size[1] is -4e+09, past the +-2.14748e+09 a number here may "
            "take");
  EXPECT_EQ(test::value_error([] {
              layer_from_config("Dropout", nlohmann::json::parse(R"({"rate": 0.5, "seed": -1.5})"));
            }),
            "Dropout config: seed must be a non-negative integer or null. Received: -1.5");
  EXPECT_NE(layer_from_config("Dropout", nlohmann::json::parse(R"({"rate": 0.5, "seed": 7})")),
            nullptr);
}

TEST(LayerRegistryTest, UserLayersRegisterThemselves) {
  register_layer("MyDense", [](const nlohmann::json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<Dense>(c.at("units").get<int64_t>(), "linear",
                                   DenseOptions{.name = c.value("name", "")});
  });
  const auto l = layer_from_config("MyDense", {{"units", 3}, {"name", "mine"}});
  EXPECT_EQ(l->name(), "mine");
  EXPECT_EQ(l->get_config()["units"], 3);
}

}  // namespace
}  // namespace osprey::nn
