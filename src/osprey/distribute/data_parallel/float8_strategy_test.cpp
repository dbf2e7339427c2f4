// float8 training under MirroredStrategy: delayed scaling must follow the global batch, as on one
// device, so every replica quantizes with the same scales and the weights match OneDevice's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/nn/layers/all.h"
#include "osprey/quant/float8_dense.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"

namespace osprey::distribute {
namespace {

using StrategyPtr = std::shared_ptr<const train::Strategy>;

Model make_float8_mlp() {
  nn::clear_session();
  return Sequential({layers::Dense(16, "relu"), layers::Dense(3)}, {.input_shape = {5}});
}

// Rows 4..7 of every batch of 8 ten times larger: the two replicas' shares have different ranges.
const Tensor& data_x() {
  static const Tensor x = [] {
    Tensor t = random_normal({24, 5}, {.seed = 21});
    float* p = t.data<float>();
    for (int64_t row = 0; row < 24; ++row) {
      if (row % 8 >= 4)
        for (int64_t j = 0; j < 5; ++j) p[row * 5 + j] *= 10.0f;
    }
    return t;
  }();
  return x;
}
const Tensor& data_y() {
  static const Tensor y = random_normal({24, 3}, {.seed = 22});
  return y;
}

// Three steps of global batch 8 from fixed initial weights, in float8.
Model train_float8(const StrategyPtr& strategy) {
  static const std::vector<Tensor> init = make_float8_mlp().get_weights();
  Model m = make_float8_mlp();
  m.set_weights(init);
  m.quantize("float8", {.float8 = {.amax_history_length = 4}});
  m.compile("sgd", "mse", {}, {.strategy = strategy});
  m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  return m;
}

std::vector<Tensor> trainable_values(const Model& m) {
  std::vector<Tensor> out;
  for (const auto& v : m.trainable_variables()) out.push_back(v.value());
  return out;
}

const quant::Float8Scalings& scalings(const Model& m, size_t layer) {
  return std::dynamic_pointer_cast<quant::Float8Dense>(m.layers()[layer])->scalings();
}

TEST(Float8StrategyTest, ScalesFollowTheGlobalBatchAndWeightsMatchOneDevice) {
  const Model one = train_float8(nullptr);
  const Model two = train_float8(std::make_shared<MirroredStrategy>(virtual_devices(2)));
  // The last batch's amax of the first layer's inputs is max|x| over all 8 rows, not the mean of
  // the two shares' maxima (which the replicas would average to if each kept its own).
  const double global_max = max(abs(data_x().narrow(0, 16, 8))).item();
  const double share_mean = 0.5 * (max(abs(data_x().narrow(0, 16, 4))).item() +
                                   max(abs(data_x().narrow(0, 20, 4))).item());
  ASSERT_GT(global_max - share_mean, 1.0);
  const Tensor h1 = scalings(one, 0).inputs.amax_history.value();
  const Tensor h2 = scalings(two, 0).inputs.amax_history.value();
  EXPECT_EQ(h2.to_vector<float>()[0], static_cast<float>(global_max));
  EXPECT_EQ(h2.to_vector<float>(), h1.to_vector<float>());
  EXPECT_EQ(scalings(two, 0).inputs.scale.value().item(),
            scalings(one, 0).inputs.scale.value().item());
  EXPECT_EQ(scalings(two, 1).kernel.amax_history.value().to_vector<float>(),
            scalings(one, 1).kernel.amax_history.value().to_vector<float>());
  // Each replica's loss is its share's mean, so its output gradients are twice one device's, and
  // so is their amax: a power of two, which float8 quantization is invariant to.
  const float g1 = scalings(one, 1).outputs_grad.amax_history.value().to_vector<float>()[0];
  const float g2 = scalings(two, 1).outputs_grad.amax_history.value().to_vector<float>()[0];
  EXPECT_NEAR(g2, 2.0f * g1, 1e-5f * g1);
  EXPECT_LE(testing::max_relative_difference(trainable_values(two), trainable_values(one)), 1e-5);
}

}  // namespace
}  // namespace osprey::distribute
