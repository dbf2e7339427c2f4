// BatchNormalization, as keras.layers.BatchNormalization: per channel (the `axis` of x),
// y = gamma * (x - mean) / sqrt(var + epsilon) + beta. Training uses the batch's mean and biased
// variance and updates moving_mean / moving_variance in place
// (moving = moving * momentum + batch * (1 - momentum)); inference uses the moving statistics.
// The moving statistics are non-trainable weights, so checkpoints carry them. As in Keras, a
// layer with trainable=false always runs in inference mode.
//   auto bn = layers::BatchNormalization();
//   Variable y = bn(x, /*training=*/true);   // x [8, 32, 32, 64]: 256 weights, 128 trainable
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct BatchNormalizationOptions {
  int axis = -1;  // the channel axis: -1 for channels_last, 1 for channels_first
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // learn beta
  bool scale = true;   // learn gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  // Cross-replica statistics. Stored and serialized; the distribution strategies act on it.
  bool synchronized = false;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class BatchNormalization : public SingleInputLayer {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  const BatchNormalizationOptions& options() const { return options_; }
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  int channel_axis(const Shape& s) const;

  BatchNormalizationOptions options_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::BatchNormalization> BatchNormalization(
    nn::BatchNormalizationOptions options = {}) {
  return nn::make_layer<nn::BatchNormalization>(std::move(options));
}
}  // namespace osprey::layers
