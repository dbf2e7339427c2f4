// QuantizedDense: the int8 inference form of nn::Dense that quant::quantize() swaps in (Keras's
// Dense after quantize("int8"), as its own layer rather than a branch inside Dense). The kernel
// is stored as int8 [in, units] with one float32 scale per output unit (symmetric abs-max:
// kernel ~ kernel_q / kernel_scale); inputs are quantized per row at call time with the seeds'
// formula scale = 127 / (max|x| + 1e-7), and the product runs as int8 x int8 -> int32 (oneDNN,
// VNNI or AMX) dequantized by 1 / (x_scale * kernel_scale). Inference only: it has no gradient.
//   auto q = quant::QuantizedDense::from_dense(dense);   // dense: a built nn::Dense
//   Variable y = (*q)(x);                                 // x: [..., in] -> [..., units] float32
// Weights keep Dense's paths: ".../dense/kernel" (int8), ".../dense/kernel_scale",
// ".../dense/bias".
#pragma once

#include <memory>

#include "osprey/nn/activations.h"
#include "osprey/nn/layer.h"
#include "osprey/nn/layers/dense.h"

namespace osprey::quant {

using autograd::Variable;

class QuantizedDense : public nn::SingleInputLayer {
 public:
  QuantizedDense(int64_t units, nn::ActivationFn activation, bool use_bias,
                 const nn::LayerOptions& options);
  // A built QuantizedDense with dense's name, config and quantized weights; ValueError when
  // dense is not built yet.
  static std::shared_ptr<QuantizedDense> from_dense(const nn::Dense& dense);

  int64_t units() const { return units_; }
  const nn::ActivationFn& activation() const { return activation_; }
  const Variable& kernel() const { return kernel_; }              // int8 [in, units]
  const Variable& kernel_scale() const { return kernel_scale_; }  // float32 [units]
  const Variable& bias() const { return bias_; }                  // float32 [units] or undefined

  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // Dense's fields plus "quantization_mode": "int8".
  nlohmann::json get_config() const override;
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  int64_t units_;
  nn::ActivationFn activation_;
  bool use_bias_;
  Variable kernel_, kernel_scale_, bias_;
};

}  // namespace osprey::quant
