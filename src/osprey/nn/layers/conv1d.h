// Conv1D: y = activation(conv1d(x, kernel) + bias), as keras.layers.Conv1D, for sequences.
// x: [N, T, C] (channels_last, default) or [N, C, T] · kernel: [k, C / groups, filters]
// -> [N, T', filters]. "causal" padding pads only the past (dilation * (k - 1) steps on the
// left), so output t sees inputs up to t: WaveNet's stacks of dilated causal convolutions.
// It runs as a 2-D convolution of height 1 (autograd::conv2d, oneDNN), so strides, dilation,
// groups and the fused activations are Conv2D's.
//   auto conv = layers::Conv1D(64, 3, {.padding = "causal", .dilation_rate = 2});
//   Variable y = conv(x);   // x [8, 100, 16] -> [8, 100, 64]; 3 * 16 * 64 + 64 parameters
#pragma once

#include "osprey/nn/activations.h"
#include "osprey/nn/layer.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

struct Conv1DOptions {
  int64_t strides = 1;
  std::string padding = "valid";              // "valid", "same" or "causal"
  std::string data_format = "channels_last";  // or "channels_first"
  int64_t dilation_rate = 1;
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

class Conv1D : public SingleInputLayer {
 public:
  Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options = {});
  int64_t filters() const { return filters_; }
  int64_t kernel_size() const { return kernel_size_; }
  const Conv1DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  int64_t input_channels(const Shape& s) const;  // checks rank and groups
  // The input's [N, 1, T, C] (or [N, C, 1, T]) view and the 2-D convolution's geometry.
  Shape as_2d(const Shape& s) const;
  Conv2dParams params(const Shape& x2d) const;
  Shape kernel_2d() const;

  int64_t filters_;
  int64_t kernel_size_;
  Conv1DOptions options_;
  Variable kernel_, bias_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Conv1D> Conv1D(int64_t filters, int64_t kernel_size,
                                       nn::Conv1DOptions options = {}) {
  return nn::make_layer<nn::Conv1D>(filters, kernel_size, std::move(options));
}
}  // namespace osprey::layers
