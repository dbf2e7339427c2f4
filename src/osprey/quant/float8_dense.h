// Float8Dense: nn::Dense trained in float8, what quant::quantize(model, "float8") swaps in
// (Keras's Dense after quantize("float8")). The inputs and the kernel are fake-quantized to
// float8_e4m3fn and the output gradient to float8_e5m2, each with its own per-tensor scale from
// delayed scaling (precision/float8.h); the product accumulates in float32; the master kernel
// stays float32 and the optimizer updates it as usual. On CPU this is an emulation with exact
// quantize/dequantize semantics: it shows how training converges with float8, not float8 speed,
// which comes with a CUDA backend.
//   auto f = quant::Float8Dense::from_dense(dense, {.amax_history_length = 16});
//   Variable y = (*f)(x, /*training=*/true);   // x: [..., in] -> [..., units] float32
// Weights: Dense's ".../kernel" and ".../bias", then the non-trainable ".../inputs_scale",
// ".../inputs_amax_history", ".../kernel_scale", ".../kernel_amax_history",
// ".../outputs_grad_scale", ".../outputs_grad_amax_history" (updated in training only).
#pragma once

#include <memory>

#include "osprey/nn/layers/dense.h"
#include "osprey/quant/float8_layer.h"

namespace osprey::quant {

class Float8Dense : public Float8Layer<nn::Dense> {
 public:
  Float8Dense(int64_t units, nn::ActivationFn activation, nn::DenseOptions options,
              precision::DelayedScaling scaling = {});
  // A built Float8Dense with dense's name, config and weights (copied); ValueError when dense is
  // not built yet.
  static std::shared_ptr<Float8Dense> from_dense(const nn::Dense& dense,
                                                 const precision::DelayedScaling& scaling);
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;
};

}  // namespace osprey::quant
