// Transformer blocks a user composes, as keras_hub.layers.TransformerEncoder and
// TransformerDecoder: multi-head self-attention and a two-layer feed-forward network, each in a
// residual branch with layer normalization and dropout. normalize_first puts the normalization
// at the start of each branch (pre-norm, GPT-2's and nanoGPT's block); off, it follows the
// residual sum (the original Transformer's post-norm, keras_hub's default). The attention's key
// width is the input width / num_heads.
//   TransformerEncoder: bidirectional self-attention. Called with [batch, T, d].
//   TransformerDecoder: causal self-attention, and cross-attention to an encoder's output when
//     called with [decoder_sequence, encoder_sequence] (it then expects that pair every call).
//     call_cached() runs it one generation step at a time over a key/value cache.
// Sublayers keep keras_hub's names: self_attention_layer_norm, self_attention (a
// MultiHeadAttention), cross_attention_layer_norm, cross_attention, feedforward_layer_norm,
// feedforward_intermediate_dense, feedforward_output_dense; weights sit under the block's path,
// `block_0/self_attention/query/kernel`. replace_sublayer() swaps any of them for a layer of
// the same name that takes the same inputs (quant::quantize's int8 and float8 forms; an attention
// must stay a MultiHeadAttention), and the config remembers the swap (nn/sublayer_swaps.h).
//   auto block = layers::TransformerDecoder(512, 4, {.dropout = 0.1, .normalize_first = true});
//   Variable y = block(x);                                  // [8, 64, 128] -> [8, 64, 128]
#pragma once

#include "osprey/nn/activations.h"
#include "osprey/nn/layers/dense.h"
#include "osprey/nn/layers/dropout.h"
#include "osprey/nn/layers/layer_normalization.h"
#include "osprey/nn/layers/multi_head_attention.h"
#include "osprey/nn/sublayer_swaps.h"

namespace osprey::nn {

struct TransformerOptions {
  double dropout = 0.0;  // after attention and after the feed-forward network, in training
  std::string activation = "relu";  // of the intermediate dense layer (keras_hub's default)
  double layer_norm_epsilon = 1e-5;
  bool normalize_first = false;
  // Biases in the dense and attention projections and beta in the normalizations. osprey's
  // addition: nanoGPT's bias=False blocks have none.
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  // The two projections back into the residual stream (attention output, feed-forward output);
  // undefined: kernel_initializer. GPT-2 scales these down by sqrt(2 * layers).
  Initializer output_kernel_initializer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class TransformerBlock : public Layer {
 public:
  int64_t intermediate_dim() const { return intermediate_dim_; }
  int64_t num_heads() const { return num_heads_; }
  const TransformerOptions& options() const { return options_; }
  std::vector<std::shared_ptr<Layer>> sublayers() const override;
  // ValueError naming the block for an unknown name, a renamed layer, or an attention replaced by
  // something that is not a MultiHeadAttention.
  void replace_sublayer(const std::string& name, std::shared_ptr<Layer> layer) override;
  void set_path_prefix(const std::string& prefix) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  const std::shared_ptr<MultiHeadAttention>& self_attention() const { return self_attention_; }
  // The input's mask keeps padded steps out of the attention (and an encoder_sequence's out of
  // the cross-attention, as keras_hub's padding masks); the output keeps the input's mask.
  bool supports_masking() const override { return true; }

 protected:
  TransformerBlock(std::string class_name, int64_t intermediate_dim, int64_t num_heads,
                   TransformerOptions options, bool causal);
  void build_impl(const std::vector<Shape>& input_shapes) override;
  Variable call(const std::vector<Variable>& inputs, bool training) override;
  static TransformerOptions read_options(const nlohmann::json& c);
  // x through the block; `self` runs the self-attention branch on its normalized input.
  template <class SelfAttention>
  Variable run(const Variable& x, const Variable& encoder, bool training, SelfAttention&& self);
  void check_input(const Shape& s) const;
  SublayerSwaps swaps_;

 private:
  // A residual branch: x + dropout(f(norm(x))) pre-norm, norm(x + dropout(f(x))) post-norm.
  template <class F>
  Variable residual(const Variable& x, LayerNormalization& norm, Dropout& dropout, bool training,
                    F&& f);

  int64_t intermediate_dim_, num_heads_;
  TransformerOptions options_;
  bool causal_;
  std::shared_ptr<LayerNormalization> self_norm_, cross_norm_, ff_norm_;
  std::shared_ptr<MultiHeadAttention> self_attention_, cross_attention_;
  std::shared_ptr<Dropout> self_dropout_, cross_dropout_, ff_dropout_;
  std::shared_ptr<Layer> ff_intermediate_, ff_output_;  // Dense, or what replaced them
};

class TransformerEncoder : public TransformerBlock {
 public:
  TransformerEncoder(int64_t intermediate_dim, int64_t num_heads, TransformerOptions options = {});
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
};

class TransformerDecoder : public TransformerBlock {
 public:
  TransformerDecoder(int64_t intermediate_dim, int64_t num_heads, TransformerOptions options = {});
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  // One generation step over the self-attention's key/value cache (see
  // MultiHeadAttention::attend_cached): x [batch, t, d] are the next t positions; no gradients,
  // no dropout. `encoder` is the encoder's output when the block has cross-attention.
  Variable call_cached(const Variable& x, AttentionCache& cache, const Variable& encoder = {});
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::TransformerEncoder> TransformerEncoder(
    int64_t intermediate_dim, int64_t num_heads, nn::TransformerOptions options = {}) {
  return nn::make_layer<nn::TransformerEncoder>(intermediate_dim, num_heads, std::move(options));
}
inline nn::LayerRef<nn::TransformerDecoder> TransformerDecoder(
    int64_t intermediate_dim, int64_t num_heads, nn::TransformerOptions options = {}) {
  return nn::make_layer<nn::TransformerDecoder>(intermediate_dim, num_heads, std::move(options));
}
}  // namespace osprey::layers
