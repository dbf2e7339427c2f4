// compile/fit under dtype policies: the automatic LossScaleOptimizer of mixed_float16, a model
// whose float16 gradients underflow without loss scaling, and save/load of a mixed model.
#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/nn/layers/all.h"
#include "osprey/optim/adam.h"
#include "osprey/optim/loss_scale_optimizer.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey {
namespace {

using precision::DTypePolicyScope;

TEST(MixedPrecisionTrainTest, CompileWrapsTheOptimizerInALossScaleOptimizerUnderMixedFloat16) {
  {
    DTypePolicyScope scope("mixed_float16");
    Model m = Sequential({layers::Dense(2)}, {.input_shape = {3}});
    m.compile("adam", "mse");
    auto* lso = dynamic_cast<optim::LossScaleOptimizer*>(&m.trainer().optimizer());
    ASSERT_NE(lso, nullptr);
    EXPECT_EQ(lso->inner().class_name(), "Adam");
    EXPECT_DOUBLE_EQ(lso->scale(), 32768.0);
    // A fixed loss_scale_factor is the user's choice of scaling: not wrapped.
    m.compile(std::make_shared<optim::Adam>(optim::AdamOptions{.loss_scale_factor = 128.0}), "mse");
    EXPECT_EQ(m.trainer().optimizer().class_name(), "Adam");
  }
  DTypePolicyScope scope("mixed_bfloat16");  // bfloat16 has float32's range: no loss scaling
  Model m = Sequential({layers::Dense(2)}, {.input_shape = {3}});
  m.compile("adam", "mse");
  EXPECT_EQ(m.trainer().optimizer().class_name(), "Adam");
}

// y = x · w_true with |x| ~ 1.5e-6, over batches of 2048: d loss / d y_pred = 2 (y_pred - y) / 2048
// is below 3e-8, half of float16's smallest subnormal, so every float16 gradient rounds to 0.
// Adam (epsilon 1e-12, so the tiny unscaled gradients still give full steps) then learns from
// the scaled ones.
double loss_ratio_after_training(bool model_policy_mixed_float16) {
  nn::clear_session();
  const Tensor x = mul(random_normal({2048, 4}, {.seed = 7}), 1.5e-6);
  const Tensor w_true = from_vector<float>({1.0f, -2.0f, 0.5f, 1.5f}, {4, 1});
  const Tensor y = matmul(x, w_true);
  std::optional<DTypePolicyScope> scope;
  if (model_policy_mixed_float16) scope.emplace("mixed_float16");
  // Without the model policy the layer is still mixed_float16, but compile() sees a float32
  // model and leaves the optimizer alone, as Keras does.
  Model m = Sequential(
      {layers::Dense(1, {},
                     {.use_bias = false, .kernel_initializer = "zeros", .dtype = "mixed_float16"})},
      {.input_shape = {4}});
  m.compile(
      std::make_shared<optim::Adam>(optim::AdamOptions{.learning_rate = 0.05, .epsilon = 1e-12}),
      "mse");
  const double before = m.evaluate(x, y, {.batch_size = 2048, .verbose = 0}).at("loss");
  m.fit(x, y, {.batch_size = 2048, .epochs = 100, .verbose = 0, .shuffle = false});
  const double after = m.evaluate(x, y, {.batch_size = 2048, .verbose = 0}).at("loss");
  EXPECT_GT(before, 0.0);
  return after / before;
}

TEST(MixedPrecisionTrainTest, Float16GradientsUnderflowWithoutLossScalingAndConvergeWithIt) {
  EXPECT_EQ(loss_ratio_after_training(false), 1.0);  // every gradient was 0: nothing moved
  EXPECT_LT(loss_ratio_after_training(true), 0.02);
}

TEST(MixedPrecisionTrainTest, SaveAndLoadKeepEachLayersPolicyAndThePredictions) {
  nn::clear_session();
  const std::string dir =
      (std::filesystem::temp_directory_path() / "osprey_mixed_save_test").string();
  std::filesystem::remove_all(dir);
  const Tensor x = random_normal({16, 6}, {.seed = 3});
  const Tensor y = from_vector<int64_t>({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {16});
  Tensor before;
  {
    DTypePolicyScope scope("mixed_float16");
    Model m =
        Sequential({layers::Dense(8, "relu"), layers::Dense(3, "softmax", {.dtype = "float32"})},
                   {.input_shape = {6}});
    m.compile("adam", "sparse_categorical_crossentropy");
    m.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
    before = m.predict(x);
    m.save(dir);
  }
  Model loaded = load_model(dir);  // the global policy is float32 again
  const auto ls = loaded.layers();
  EXPECT_EQ(ls[0]->dtype_policy().name(), "mixed_float16");
  EXPECT_EQ(ls[0]->variables()[0].dtype(), DType::float32);
  EXPECT_EQ(ls[1]->dtype_policy().name(), "float32");
  EXPECT_EQ(loaded.network().dtype_policy().name(), "mixed_float16");
  const Tensor after = loaded.predict(x);
  EXPECT_EQ(after.dtype(), DType::float32);
  EXPECT_EQ(sum(abs(sub(before, after))).item(), 0.0);
  auto* lso = dynamic_cast<optim::LossScaleOptimizer*>(&loaded.trainer().optimizer());
  ASSERT_NE(lso, nullptr);  // the loss scale and its counters came back with the optimizer state
  EXPECT_EQ(lso->iterations(), 4);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace osprey
