// Conv2D: y = activation(conv2d(x, kernel) + bias), as keras.layers.Conv2D.
// x: [N, H, W, C] (channels_last, default) or [N, C, H, W] · kernel: [kh, kw, C / groups, filters]
// -> [N, H', W', filters]. The convolution kernel adds the bias; the activation runs after it
// (autograd::conv2d has no fused activation).
//   auto conv = layers::Conv2D(32, 3, {.padding = "same", .activation = "relu"});
//   Variable y = conv(x);   // x [8, 28, 28, 1] -> [8, 28, 28, 32]; 320 parameters
#pragma once

#include <array>

#include "osprey/nn/activations.h"
#include "osprey/nn/layer.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

struct Conv2DOptions {
  std::array<int64_t, 2> strides{1, 1};
  std::string padding = "valid";              // "valid" or "same"
  std::string data_format = "channels_last";  // or "channels_first"
  std::array<int64_t, 2> dilation_rate{1, 1};
  int64_t groups = 1;  // input channels and filters split into groups
  ActivationFn activation{};
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Conv2D : public SingleInputLayer {
 public:
  Conv2D(int64_t filters, std::array<int64_t, 2> kernel_size, Conv2DOptions options = {});
  int64_t filters() const { return filters_; }
  const std::array<int64_t, 2>& kernel_size() const { return kernel_size_; }
  const Conv2DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  // For subclasses saved under their own class name (quant::Float8Conv2D).
  Conv2D(std::string class_name, int64_t filters, std::array<int64_t, 2> kernel_size,
         Conv2DOptions options);
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 protected:
  Conv2dOptions conv_options() const;
  void check_input_shape(const Shape& s) const;

 private:
  int64_t filters_;
  std::array<int64_t, 2> kernel_size_;
  Conv2DOptions options_;
  Variable kernel_, bias_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Conv2D> Conv2D(int64_t filters, std::array<int64_t, 2> kernel_size,
                                       nn::Conv2DOptions options = {}) {
  return nn::make_layer<nn::Conv2D>(filters, kernel_size, std::move(options));
}
// A square kernel: Conv2D(32, 3) is Conv2D(32, {3, 3}).
inline nn::LayerRef<nn::Conv2D> Conv2D(int64_t filters, int64_t kernel_size,
                                       nn::Conv2DOptions options = {}) {
  return nn::make_layer<nn::Conv2D>(filters, std::array<int64_t, 2>{kernel_size, kernel_size},
                                    std::move(options));
}
}  // namespace osprey::layers
