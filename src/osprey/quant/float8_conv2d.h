// Float8Conv2D: nn::Conv2D trained in float8, what quant::quantize(model, "float8") swaps in.
// The same recipe as Float8Dense (float8_dense.h): inputs and kernel fake-quantized to e4m3fn,
// the output gradient to e5m2, each with a delayed per-tensor scale, float32 accumulation in the
// oneDNN convolution, a float32 master kernel. Emulated on CPU (exact quantize/dequantize
// semantics; float8 speed comes with a CUDA backend).
//   auto f = quant::Float8Conv2D::from_conv2d(conv, {});
//   Variable y = (*f)(x, /*training=*/true);   // x [N, H, W, C] -> [N, H', W', filters]
// Weights: Conv2D's kernel and bias, then the six scaling weights named as in Float8Dense.
#pragma once

#include <memory>

#include "osprey/nn/layers/conv2d.h"
#include "osprey/quant/float8_layer.h"

namespace osprey::quant {

class Float8Conv2D : public Float8Layer<nn::Conv2D> {
 public:
  Float8Conv2D(int64_t filters, std::array<int64_t, 2> kernel_size, nn::Conv2DOptions options,
               precision::DelayedScaling scaling = {});
  // A built Float8Conv2D with conv's name, config and weights (copied); ValueError when conv is
  // not built yet.
  static std::shared_ptr<Float8Conv2D> from_conv2d(const nn::Conv2D& conv,
                                                   const precision::DelayedScaling& scaling);
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;
};

}  // namespace osprey::quant
