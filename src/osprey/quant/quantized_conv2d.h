// QuantizedConv2D: the int8 inference form of nn::Conv2D that quant::quantize() swaps in. The
// kernel is int8 HWIO [kh, kw, in / groups, filters] with one float32 scale per filter (symmetric
// abs-max over the filter's kh * kw * in weights). Inputs are quantized at call time per sample
// (the seeds' abs-max formula over the sample's H * W * C values): the finest granularity that
// factors out of a convolution sum, whose taps span pixels and channels but never samples (a
// per-pixel scale would not), and a sample's output never depends on the rest of its batch.
// int8 x int8 -> int32 runs in oneDNN; one pass of ours dequantizes by
// 1 / (x_scale[n] * kernel_scale[o]), adds the bias and applies the activation (oneDNN 2.6 has no
// runtime output scales for convolutions). Inference only.
// A MaxPooling2D that directly follows the Conv2D can be folded in (quantize() does it in a
// Sequential): the layer then returns the pooled output, taking the maximum over the int32 sums
// before dequantizing (exact for the non-decreasing activations linear, relu, sigmoid and tanh)
// so the large unpooled float32 tensor never exists: in the Fashion-MNIST CNN that tensor is
// [256, 26, 26, 32] per batch, written and read three times by conv + dequantize + pool.
//   auto q = quant::QuantizedConv2D::from_conv2d(conv);   // conv: a built nn::Conv2D
//   Variable y = (*q)(x);   // x [N, H, W, C] -> float32 [N, H', W', filters]
//   auto qp = quant::QuantizedConv2D::from_conv2d(conv, pool.get());   // pool: a MaxPooling2D
//   Variable z = (*qp)(x);  // == pool(conv(x)) of the unfused int8 layer, bit for bit
// Weights keep Conv2D's paths: ".../conv2d/kernel" (int8), ".../kernel_scale", ".../bias".
#pragma once

#include <memory>

#include "osprey/nn/layer.h"
#include "osprey/nn/layers/conv2d.h"
#include "osprey/nn/layers/pooling2d.h"

namespace osprey::quant {

using autograd::Variable;

class QuantizedConv2D : public nn::SingleInputLayer {
 public:
  // options: Conv2D's (the initializers and regularizers are unused).
  QuantizedConv2D(int64_t filters, std::array<int64_t, 2> kernel_size, nn::Conv2DOptions options);
  // A built QuantizedConv2D with conv's name, config and quantized weights, and with pool (when
  // non-null) folded in; ValueError when conv is not built yet, or when pool cannot be folded
  // (see can_fold).
  static std::shared_ptr<QuantizedConv2D> from_conv2d(const nn::Conv2D& conv,
                                                      const nn::MaxPooling2D* pool = nullptr);
  // Whether pool can be folded into the quantized form of conv: an activation that commutes with
  // the maximum (linear, relu, sigmoid, tanh) and the same data_format.
  static bool can_fold(const nn::Conv2D& conv, const nn::MaxPooling2D& pool);

  int64_t filters() const { return filters_; }
  const Variable& kernel() const { return kernel_; }  // int8 [kh, kw, in / groups, filters]
  const Variable& kernel_scale() const { return kernel_scale_; }  // float32 [filters]
  const Variable& bias() const { return bias_; }                  // float32 [filters] or undefined
  // The folded MaxPooling2D (its geometry and name; it is never called), or null.
  const std::shared_ptr<nn::MaxPooling2D>& fused_max_pooling() const { return pool_; }

  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // Conv2D's fields (without initializers and regularizers) plus "quantization_mode": "int8",
  // and "fused_max_pooling": the folded MaxPooling2D's config when there is one.
  nlohmann::json get_config() const override;
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  Conv2dOptions conv_options() const;
  int64_t input_channels(const Shape& s) const;
  void fold(std::shared_ptr<nn::MaxPooling2D> pool);

  int64_t filters_;
  std::array<int64_t, 2> kernel_size_;
  nn::Conv2DOptions options_;
  Variable kernel_, kernel_scale_, bias_;
  std::shared_ptr<nn::MaxPooling2D> pool_;
};

}  // namespace osprey::quant
