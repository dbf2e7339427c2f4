// QuantizedMultiHeadAttention: the int8 inference form of nn::MultiHeadAttention (and of
// nn::GroupedQueryAttention: fewer key/value heads) that quant::quantize() swaps in for the whole
// layer. Its four projections run as QuantizedDense's product (linear_int8: activations quantized
// per row at call time, int8 x int8 -> int32, dequantized), each kernel int8 in Keras's shape
// with one float32 scale per output column of the kernel viewed as a matrix; the attention
// itself (softmax over q·k, the key/value cache of generation) stays float32 in the base class.
// Inference only: it has no gradient.
//   auto q = quant::QuantizedMultiHeadAttention::from_attention(mha);   // mha: built
//   Variable y = q->attend(x, x, {}, {.use_causal_mask = true});
// Weights keep the attention's paths: ".../query/kernel" (int8 [in, heads, key_dim]),
// ".../query/kernel_scale" ([heads, key_dim]), ".../query/bias"; the same for key/, value/ and
// attention_output/ (kernel [heads, value_dim, out], kernel_scale [out]).
#pragma once

#include <memory>

#include "osprey/nn/layers/multi_head_attention.h"

namespace osprey::quant {

using autograd::Variable;

class QuantizedMultiHeadAttention : public nn::MultiHeadAttention {
 public:
  // options.dtype is ignored: the layer computes in float32, as every int8 layer of quant/.
  QuantizedMultiHeadAttention(int64_t num_heads, int64_t num_key_value_heads, int64_t key_dim,
                              nn::MultiHeadAttentionOptions options);
  // A built QuantizedMultiHeadAttention with attention's name, config and quantized weights;
  // ValueError when attention is not built yet.
  static std::shared_ptr<QuantizedMultiHeadAttention> from_attention(
      const nn::MultiHeadAttention& attention);

  // MultiHeadAttention's fields plus "num_key_value_heads" and "quantization_mode": "int8".
  nlohmann::json get_config() const override;
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  void build_impl(const std::vector<Shape>& input_shapes) override;
  Variable linear(const Variable& x, Projection p, bool training) override;

 private:
  struct Int8Projection {
    Variable kernel, kernel_scale, bias;
  };
  Int8Projection projections_[4];
};

}  // namespace osprey::quant
