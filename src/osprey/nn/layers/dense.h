// Dense: y = activation(x · kernel + bias), on the last axis of x, as keras.layers.Dense.
// x: [..., in] · kernel: [in, units] -> [..., units]. relu/gelu/sigmoid/tanh are fused into the
// matmul kernel; softmax runs after it.
#pragma once

#include "osprey/nn/activations.h"
#include "osprey/nn/layer.h"

namespace osprey::nn {

struct DenseOptions {
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Dense : public SingleInputLayer {
 public:
  bool supports_masking() const override { return true; }  // passes the mask on
  Dense(int64_t units, ActivationFn activation = {}, DenseOptions options = {});
  int64_t units() const { return units_; }
  const ActivationFn& activation() const { return activation_; }
  const DenseOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  // For subclasses saved under their own class name (quant::Float8Dense).
  Dense(std::string class_name, int64_t units, ActivationFn activation, DenseOptions options);
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  int64_t units_;
  ActivationFn activation_;
  DenseOptions options_;
  Variable kernel_, bias_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Dense> Dense(int64_t units, nn::ActivationFn activation = {},
                                     nn::DenseOptions options = {}) {
  return nn::make_layer<nn::Dense>(units, std::move(activation), std::move(options));
}
}  // namespace osprey::layers
