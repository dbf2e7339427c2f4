// A model built from its description (model_config.h): from config.json's tree, from the model
// alone, from a TOML file and from a folder save() wrote (fresh weights, the same architecture),
// and errors that name the source and the field.
#include "osprey/models/model_config.h"

#include <gtest/gtest.h>

#include "osprey/core/rng.h"
#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/models/saving.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::models {
namespace {

using io::testing::TempDir;
using io::testing::write_bytes;
using testing::expect_error;

constexpr const char* kMlp = R"({
  "format": "osprey.model",
  "model": {"class_name": "Sequential", "config": {
    "name": "net", "build_input_shape": [null, 4],
    "layers": [{"class_name": "Dense", "config": {"units": 8, "activation": "relu"}},
               {"class_name": "Dense", "config": {"units": 3, "activation": "softmax"}}]}},
  "compile_config": {"loss": "not read"}})";

constexpr const char* kMlpToml = R"(# the same MLP
[model]
class_name = "Sequential"
[model.config]
name = "net"
build_input_shape = [-1, 4]   # TOML has no null: -1 is the batch axis
[[model.config.layers]]
class_name = "Dense"
config = { units = 8, activation = "relu" }
[[model.config.layers]]
class_name = "Dense"
config = { units = 3, activation = "softmax" }
)";

std::vector<std::string> classes(const Network& net) {
  std::vector<std::string> out;
  for (const auto& l : net.layers()) out.push_back(l->class_name());
  return out;
}

TEST(ModelConfigTest, BuildsTheModelConfigJsonDescribesWithFreshWeights) {
  nn::clear_session();
  auto net = model_from_config(nlohmann::json::parse(kMlp), "net.json");
  EXPECT_EQ(net->name(), "net");
  EXPECT_TRUE(net->built());
  EXPECT_EQ(classes(*net), (std::vector<std::string>{"Dense", "Dense"}));
  EXPECT_EQ(net->count_params(), 4 * 8 + 8 + 8 * 3 + 3);
  // Its config is the description's, filled in with every default.
  const nlohmann::json config = nn::serialize_layer(*net);
  EXPECT_EQ(config["config"]["layers"][1]["config"]["units"], 3);
  EXPECT_EQ(config["config"]["build_input_shape"], nlohmann::json::parse("[null, 4]"));
}

TEST(ModelConfigTest, TheModelAloneAndTomlDescribeTheSameModel) {
  nn::clear_session();
  set_global_seed(7);
  auto from_json = model_from_config(nlohmann::json::parse(kMlp)["model"], "model.json");
  TempDir dir;
  write_bytes(dir / "net.toml", kMlpToml);
  nn::clear_session();
  set_global_seed(7);
  auto from_toml = model_from_file(dir / "net.toml");
  EXPECT_EQ(nn::serialize_layer(*from_toml), nn::serialize_layer(*from_json));
  EXPECT_EQ(from_toml->get_weights()[0].to_vector<float>(),
            from_json->get_weights()[0].to_vector<float>());
}

TEST(ModelConfigTest, AFolderSaveWroteGivesItsArchitectureNotItsWeights) {
  nn::clear_session();
  set_global_seed(1);
  Sequential saved({layers::Dense(5, "relu"), layers::Dense(2)}, {.input_shape = {3}});
  TempDir dir;
  save_model(saved, dir / "saved");
  set_global_seed(2);
  auto net = model_from_file(dir / "saved");
  EXPECT_EQ(nn::serialize_layer(*net), nn::serialize_layer(saved));
  EXPECT_NE(net->get_weights()[0].to_vector<float>(), saved.get_weights()[0].to_vector<float>());
}

TEST(ModelConfigTest, ErrorsNameTheSourceAndTheField) {
  auto description = nlohmann::json::parse(kMlp);
  description["model"]["config"]["layers"].push_back({{"class_name", "Dense2"}});
  expect_error<ValueError>(
      [&] { model_from_config(description, "net.json"); },
      {"net.json: layers[2]: unknown layer class 'Dense2'. Registered layers: "});
  description["model"]["config"]["layers"][2] = {{"class_name", "Dense"}, {"config", {}}};
  expect_error<ValueError>([&] { model_from_config(description, "net.json"); },
                           {"net.json: layers[2] (Dense): key 'units' not found"});
  description["model"]["config"]["layers"][2]["config"]["units"] = "many";
  expect_error<ValueError>([&] { model_from_config(description, "net.json"); },
                           {"net.json: layers[2] (Dense): type must be number, but is string"});
  expect_error<ValueError>(
      [] { model_from_config(nlohmann::json::parse(R"({"layers": []})"), "x.json"); },
      {"x.json: no model described"});
  expect_error<ValueError>(
      [] {
        model_from_config(nlohmann::json::parse(R"({"model": {"class_name": "Sequential"}})"),
                          "x.json");
      },
      {"x.json: model.config: key 'layers' not found"});
  expect_error<ValueError>(
      [] {
        model_from_config(
            nlohmann::json::parse(R"({"class_name": "Dense", "config": {"units": 2}})"), "x.json");
      },
      {"x.json: class_name: 'Dense' is a layer, not a model"});
}

TEST(ModelConfigTest, FileErrorsNameTheFileAndTheLine) {
  TempDir dir;
  write_bytes(dir / "bad.toml", "[model]\nclass_name = \n");
  expect_error<ValueError>([&] { model_from_file(dir / "bad.toml"); },
                           {"bad.toml:2:", "invalid TOML"});
  write_bytes(dir / "bad.json", "{\"model\": {\n  \"class_name\": }\n");
  expect_error<IoError>([&] { model_from_file(dir / "bad.json"); },
                        {"bad.json:2:", "invalid JSON"});
  expect_error<IoError>([&] { model_from_file(dir / "missing.json"); }, {"missing.json"});
  expect_error<IoError>([&] { model_from_file(dir.path()); }, {"config.json does not exist"});
}

}  // namespace
}  // namespace osprey::models
