// RMSNormalization, as keras.layers.RMSNormalization: each sample scaled by the root mean square
// of its last axis, y = x / sqrt(mean(x^2) + epsilon) * scale, without LayerNormalization's
// centring: the normalization of LLaMA-style transformers. Same computation in training and
// inference.
//   auto norm = layers::RMSNormalization();
//   Variable y = norm(h);   // h [8, 128, 512]: scale [512]
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct RMSNormalizationOptions {
  int axis = -1;  // the last axis only (Keras's default)
  double epsilon = 1e-6;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RMSNormalization : public SingleInputLayer {
 public:
  bool supports_masking() const override { return true; }  // passes the mask on
  explicit RMSNormalization(RMSNormalizationOptions options = {});
  const RMSNormalizationOptions& options() const { return options_; }
  const Variable& scale() const { return scale_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  void check_input_shape(const Shape& s) const;
  RMSNormalizationOptions options_;
  Variable scale_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::RMSNormalization> RMSNormalization(
    nn::RMSNormalizationOptions options = {}) {
  return nn::make_layer<nn::RMSNormalization>(std::move(options));
}
}  // namespace osprey::layers
