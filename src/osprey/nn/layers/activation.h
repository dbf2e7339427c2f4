// Activation: applies an activation by Keras name ("relu", "gelu", "sigmoid", "tanh",
// "softmax", "linear"), as keras.layers.Activation. The class is ActivationLayer so it does not
// hide the kernels' osprey::Activation enum inside namespace osprey::nn; its Keras class name
// (configs, the registry, the default name "activation") is "Activation".
//   Variable p = layers::Activation("softmax")(logits);
#pragma once

#include "osprey/nn/activations.h"
#include "osprey/nn/layer.h"

namespace osprey::nn {

struct ActivationOptions {
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class ActivationLayer : public SingleInputLayer {
 public:
  bool supports_masking() const override { return true; }  // passes the mask on
  explicit ActivationLayer(ActivationFn activation, ActivationOptions options = {});
  const ActivationFn& activation() const { return activation_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  ActivationFn activation_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::ActivationLayer> Activation(nn::ActivationFn activation,
                                                    nn::ActivationOptions options = {}) {
  return nn::make_layer<nn::ActivationLayer>(std::move(activation), std::move(options));
}
}  // namespace osprey::layers
