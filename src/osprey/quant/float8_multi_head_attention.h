// Float8MultiHeadAttention: nn::MultiHeadAttention (or GroupedQueryAttention) trained with its
// four projections in float8, what quant::quantize(model, "float8") swaps in for the whole layer
// (as Float8Dense for a Dense): each projection runs float8_linear, its input and kernel
// fake-quantized to float8_e4m3fn and its output gradient to e5m2 with delayed scaling, each with
// its own scaling state. The attention itself (q·k, softmax, the weighted values) stays in the
// compute dtype; the master kernels stay float32 and train as before.
//   auto f = quant::Float8MultiHeadAttention::from_attention(mha, {.amax_history_length = 16});
// Weights: the attention's (".../query/kernel", ...), then per projection the non-trainable
// ".../query/inputs_scale", ".../query/inputs_amax_history", ".../query/kernel_scale", ...
// (Float8Dense's six), updated in training only.
#pragma once

#include <array>
#include <memory>

#include "osprey/nn/layers/multi_head_attention.h"
#include "osprey/quant/float8_ops.h"

namespace osprey::quant {

class Float8MultiHeadAttention : public nn::MultiHeadAttention {
 public:
  Float8MultiHeadAttention(int64_t num_heads, int64_t num_key_value_heads, int64_t key_dim,
                           nn::MultiHeadAttentionOptions options,
                           precision::DelayedScaling scaling = {});
  // A built Float8MultiHeadAttention with attention's name, config and weights (copied);
  // ValueError when attention is not built yet.
  static std::shared_ptr<Float8MultiHeadAttention> from_attention(
      const nn::MultiHeadAttention& attention, const precision::DelayedScaling& scaling);
  const precision::DelayedScaling& scaling() const { return scaling_; }

  // MultiHeadAttention's fields plus "num_key_value_heads", "quantization_mode": "float8",
  // "amax_history_length" and "margin".
  nlohmann::json get_config() const override;
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  void build_impl(const std::vector<Shape>& input_shapes) override;
  Variable linear(const Variable& x, Projection p, bool training) override;

 private:
  precision::DelayedScaling scaling_;
  std::array<Float8Scalings, kNumProjections> scalings_;
};

}  // namespace osprey::quant
