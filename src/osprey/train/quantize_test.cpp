// model.quantize("int8") through the user-facing Model: fit in float, quantize, save, load.
#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"

namespace osprey {
namespace {

TEST(ModelQuantizeTest, FitQuantizeSaveLoadGivesIdenticalInt8Predictions) {
  nn::clear_session();
  Model model = Sequential({layers::Dense(16, "relu"), layers::Dense(3)}, {.input_shape = {5}});
  model.compile("adam", "mse");
  const Tensor x = random_normal({32, 5}, {.seed = 1});
  const Tensor y = random_normal({32, 3}, {.seed = 2});
  model.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  const Tensor before = model.predict(x);
  EXPECT_EQ(model.quantize("int8").size(), 2u);
  EXPECT_EQ(model.layers()[0]->class_name(), "QuantizedDense");
  const Tensor after = model.predict(x);
  EXPECT_LT(max(abs(sub(after, before))).item(), 0.05 * max(abs(before)).item());
  const auto dir = std::filesystem::temp_directory_path() / "osprey_model_quantize_test";
  std::filesystem::remove_all(dir);
  model.save(dir.string());
  Model loaded = load_model(dir.string());
  EXPECT_EQ(loaded.layers()[1]->class_name(), "QuantizedDense");
  EXPECT_EQ(loaded.predict(x).to_vector<float>(), after.to_vector<float>());
  std::filesystem::remove_all(dir);
}

// The Fashion-MNIST CNN's int8 test (pooling folded into the convolutions) is with the model,
// in applications/fashion_mnist_models_test.cpp.

}  // namespace
}  // namespace osprey
