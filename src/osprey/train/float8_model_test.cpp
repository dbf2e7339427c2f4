// model.quantize("float8") through the user-facing Model: the checks, training after the swap,
// save/load of the scaling state. In train's tests because it needs models, quant and the
// trainer. The swap on the Fashion-MNIST CNN and the accuracy of float8 training next to float32
// on the MLP (issue 4) are with those models, in applications/fashion_mnist_models_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "osprey/core/rng.h"
#include "osprey/io/safetensors.h"
#include "osprey/models/model_config.h"
#include "osprey/nn/layers/all.h"
#include "osprey/quant/float8_dense.h"
#include "osprey/quant/quantize.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"
#include "osprey/train/model.h"

namespace osprey {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("osprey_float8_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

TEST(Float8ModelTest, ModesLayersAndSettingsAreCheckedWithClearErrors) {
  nn::clear_session();
  Model model = Sequential({layers::Dense(4, "relu"), layers::Dropout(0.1), layers::Dense(2)},
                           {.input_shape = {3}});
  testing::expect_error<ValueError>([&] { model.quantize("float8", {.layers = {"dropout"}}); },
                                    {"'dropout' is a Dropout; mode \"float8\" quantizes Dense, "
                                     "Conv2D and MultiHeadAttention layers only"});
  testing::expect_error<ValueError>(
      [&] { model.quantize("float8", {.float8 = {.amax_history_length = 0}}); },
      {"quantize: amax_history_length must be at least 1"});
  model.quantize("int8", {.layers = {"dense"}});
  testing::expect_error<ValueError>([&] { model.quantize("float8", {.layers = {"dense"}}); },
                                    {"quantize: layer 'dense' is already quantized"});
  EXPECT_EQ(model.quantize("float8"), (std::vector<std::string>{"sequential/dense_1/kernel"}));
  EXPECT_EQ(model.layers()[0]->class_name(), "QuantizedDense");
  testing::expect_error<ValueError>(
      [&] { model.quantize("float8"); },
      {"no Dense, Conv2D or MultiHeadAttention layer left to quantize (mode \"float8\")"});
  testing::expect_error<ValueError>([&] { model.quantize("fp8"); },
                                    {"Supported modes: int8, float8"});
}

// Quantized after compile and one fit: the next fit must train the float8 layers (the step
// executor cached the replaced variables), and then a saved model must load with the trained
// scales and histories and predict identically.
TEST(Float8ModelTest, TrainsAfterTheSwapAndSavesAndLoadsItsScalingState) {
  nn::clear_session();
  set_global_seed(3);
  Model model = Sequential({layers::Dense(16, "relu"), layers::Dense(3)}, {.input_shape = {8}});
  model.compile("adam", "mse");
  const Tensor x = random_normal({256, 8}, {.seed = 1});
  const Tensor y = random_normal({256, 3}, {.seed = 2});
  model.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0});
  model.quantize("float8", {.float8 = {.amax_history_length = 8, .margin = 1}});
  const auto kernel_before = testing::values(model.get_layer("dense")->own_weights()[0].variable);
  const double loss_before = model.evaluate(x, y).at("loss");
  model.fit(x, y, {.batch_size = 32, .epochs = 3, .verbose = 0});
  EXPECT_LT(model.evaluate(x, y).at("loss"), loss_before);
  EXPECT_NE(testing::values(model.get_layer("dense")->own_weights()[0].variable), kernel_before);
  const auto f = std::dynamic_pointer_cast<quant::Float8Dense>(model.get_layer("dense_1"));
  ASSERT_NE(f, nullptr);
  const Tensor grad_history = f->scalings().outputs_grad.amax_history.value().clone();
  EXPECT_GT(grad_history.at({7}), 0.0);  // 24 steps filled all 8 entries
  EXPECT_NE(f->scalings().outputs_grad.scale.item(), 1.0);

  const fs::path dir = temp_dir("save");
  model.save(dir.string());
  const io::SafetensorsFile file = io::load_safetensors(dir / "model.safetensors");
  ASSERT_NE(file.find("sequential/dense_1/outputs_grad_amax_history"), nullptr);
  EXPECT_EQ(file.find("sequential/dense/kernel")->dtype(), DType::float32);
  Model loaded = load_model(dir.string());
  EXPECT_EQ(loaded.layers()[1]->class_name(), "Float8Dense");
  EXPECT_EQ(loaded.layers()[1]->get_config(), f->get_config());
  const auto vs = model.variables(), ls = loaded.variables();
  ASSERT_EQ(ls.size(), vs.size());
  for (size_t i = 0; i < vs.size(); ++i) {
    EXPECT_EQ(ls[i].name(), vs[i].name());
    EXPECT_EQ(ls[i].value().to_vector<float>(), vs[i].value().to_vector<float>()) << vs[i].name();
  }
  EXPECT_EQ(loaded.predict(x).to_vector<float>(), model.predict(x).to_vector<float>());
  fs::remove_all(dir);
}

// Issue 48: the folder `osprey quantize DIR --mode float8` writes is a model to train on. It
// loads with load_model (weights and compile config: predicts the same, bit for bit, and fits on)
// and, as the description `osprey train --model DIR` reads, rebuilds its Float8Dense layers
// (with its weights loaded, the same predictions) and trains. An int8 model is refused by fit.
TEST(Float8ModelTest, AQuantizedModelSavedLoadsAndTrainsFromItsFolderAndAsADescription) {
  nn::clear_session();
  set_global_seed(5);
  Model model = Sequential({layers::Dense(16, "relu"), layers::Dense(3)}, {.input_shape = {8}});
  model.compile("adam", "mse");
  const Tensor x = random_normal({128, 8}, {.seed = 6});
  const Tensor y = random_normal({128, 3}, {.seed = 7});
  model.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0});
  model.quantize("float8");
  const Tensor quantized = model.predict(x);
  const fs::path dir = temp_dir("describe");
  model.save(dir.string());

  Model loaded = load_model(dir.string());
  EXPECT_EQ(loaded.predict(x).to_vector<float>(), quantized.to_vector<float>());
  const double loss_before = loaded.evaluate(x, y).at("loss");
  const double loss_after =
      loaded.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0}).history.at("loss").at(0);
  EXPECT_TRUE(std::isfinite(loss_after));
  EXPECT_NE(loaded.evaluate(x, y).at("loss"), loss_before);

  Model described(models::model_from_file(dir));  // what osprey train --model DIR builds
  ASSERT_EQ(described.layers().size(), 2u);
  EXPECT_EQ(described.layers()[0]->class_name(), "Float8Dense");
  EXPECT_EQ(described.layers()[1]->get_config(), model.layers()[1]->get_config());
  described.load_weights(dir.string());
  EXPECT_EQ(described.predict(x).to_vector<float>(), quantized.to_vector<float>());
  described.compile("sgd", "mse");
  const double described_before = described.evaluate(x, y).at("loss");
  const double described_after =
      described.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0}).history.at("loss").at(0);
  EXPECT_TRUE(std::isfinite(described_after));
  EXPECT_NE(described.evaluate(x, y).at("loss"), described_before);
  fs::remove_all(dir);

  Model int8 = Sequential(
      {layers::Dense(4, "relu", {.name = "hidden"}), layers::Dense(3, {}, {.name = "scores"})},
      {.name = "net", .input_shape = {8}});
  int8.quantize("int8", {.layers = {"scores"}});
  int8.compile("adam", "mse");
  EXPECT_EQ(quant::int8_layers(int8.network()), (std::vector<std::string>{"scores"}));
  testing::expect_error<ValueError>(
      [&] { int8.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0}); },
      {"fit: model 'net' holds int8-quantized layers (scores); int8 models are for "
       "inference only. Train the float32 model, then quantize it again (or quantize it with "
       "mode \"float8\", which trains)"});
}

}  // namespace
}  // namespace osprey
