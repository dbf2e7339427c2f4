#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"

namespace osprey {
namespace {

std::string temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("osprey_save_test_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

TEST(SaveTest, SaveThenLoadGivesIdenticalPredictionsAndTheSameNextStep) {
  nn::clear_session();
  Model model = Sequential({layers::Dense(16, "relu"), layers::Dropout(0.0), layers::Dense(3)},
                           {.input_shape = {5}});
  model.compile("adam", "mse");
  const Tensor x = random_normal({32, 5}, {.seed = 1});
  const Tensor y = random_normal({32, 3}, {.seed = 2});
  model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  const std::string dir = temp_dir("roundtrip");
  model.save(dir);
  Model loaded = load_model(dir);
  EXPECT_EQ(sum(abs(sub(model.predict(x), loaded.predict(x)))).item(), 0.0);
  const double a = model.train_on_batch(x, y).at("loss");
  const double b = loaded.train_on_batch(x, y).at("loss");
  EXPECT_EQ(a, b);
  EXPECT_EQ(sum(abs(sub(model.predict(x), loaded.predict(x)))).item(), 0.0);  // same update
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace osprey
