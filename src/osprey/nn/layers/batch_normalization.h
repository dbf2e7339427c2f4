// BatchNormalization, as keras.layers.BatchNormalization: per channel (the `axis` of x),
// y = gamma * (x - mean) / sqrt(var + epsilon) + beta. Training uses the batch's mean and biased
// variance and updates moving_mean / moving_variance in place
// (moving = moving * momentum + batch * (1 - momentum)); inference uses the moving statistics.
// The moving statistics are non-trainable weights, so checkpoints carry them. As in Keras, a
// layer with trainable=false always runs in inference mode.
// synchronized=true (tf.keras's BatchNormalization(synchronized=True)): in a training step of a
// data-parallel strategy (Mirrored, CentralStorage), the batch mean and variance are those of
// the global batch, all-reduced across replicas (replica_context.h), so every replica normalizes
// and updates its moving statistics as one device would on the whole batch, and the input
// gradient flows through the global statistics. By default (false) each replica uses its own
// share's statistics and the strategy averages the moving ones afterwards: the moving mean is
// then the global one but the moving variance is the mean of per-replica variances (smaller when
// the shares differ). Outside a strategy, or with one replica, synchronized changes nothing.
// Each synchronized layer makes one collective in forward and one in backward, in graph order:
// every replica runs the same model, so the calls pair up.
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
  // Cross-replica batch statistics in training under a data-parallel strategy (see above).
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
