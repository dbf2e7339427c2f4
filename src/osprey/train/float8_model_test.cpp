// model.quantize("float8") through the user-facing Model: the checks, training after the swap,
// save/load of the scaling state. In train's tests because it needs models, quant and the
// trainer. The swap on the Fashion-MNIST CNN and the accuracy of float8 training next to float32
// on the MLP (issue 4) are with those models, in applications/fashion_mnist_models_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/core/rng.h"
#include "osprey/io/safetensors.h"
#include "osprey/nn/layers/all.h"
#include "osprey/quant/float8_dense.h"
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
  testing::expect_error<ValueError>(
      [&] { model.quantize("float8", {.layers = {"dropout"}}); },
      {"'dropout' is a Dropout; mode \"float8\" quantizes Dense and Conv2D layers only"});
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
      {"no Dense or Conv2D layer left to quantize (mode \"float8\")"});
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

}  // namespace
}  // namespace osprey
