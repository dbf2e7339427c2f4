// LayerNormalization, as keras.layers.LayerNormalization: each sample normalized over `axis`
// (the last axis by default; several trailing axes may be given),
// y = gamma * (x - mean) / sqrt(var + epsilon) + beta, with gamma and beta of the normalized
// axes' shape. Same computation in training and inference.
//   auto ln = layers::LayerNormalization();
//   Variable y = ln(h);   // h [8, 128, 512]: gamma, beta [512]
#pragma once

#include <vector>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct LayerNormalizationOptions {
  std::vector<int> axis{-1};  // trailing axes, e.g. {-1} or {-2, -1}
  double epsilon = 1e-3;
  bool center = true;  // learn beta
  bool scale = true;   // learn gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class LayerNormalization : public SingleInputLayer {
 public:
  bool supports_masking() const override { return true; }  // passes the mask on
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  const LayerNormalizationOptions& options() const { return options_; }
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  // The first normalized axis (non-negative) for an input of this shape; ValueError when the
  // axes are not the trailing ones.
  int begin_axis(const Shape& s) const;

  LayerNormalizationOptions options_;
  Variable gamma_, beta_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::LayerNormalization> LayerNormalization(
    nn::LayerNormalizationOptions options = {}) {
  return nn::make_layer<nn::LayerNormalization>(std::move(options));
}
}  // namespace osprey::layers
