// Embedding: rows of a trainable table looked up by integer index, as keras.layers.Embedding.
// indices [...] (int32/int64; float indices are truncated, as Keras casts them) -> [...,
// output_dim]. The table "embeddings" is [input_dim, output_dim], initialized uniform in [-0.05,
// 0.05]. With mask_zero, index 0 is padding: the output carries the mask indices != 0 (Keras's
// _keras_mask; see Layer::supports_masking), which recurrent layers, attention, pooling, the loss
// and the metrics honour, and input_dim must count index 0 (vocabulary + 1), as Keras says.
// A language model whose head shares the table (weight tying) asks it for the logits
// through TiedEmbedding, which quant::QuantizedEmbedding answers from its int8 table too.
//   auto emb = layers::Embedding(1000, 64);        // 64000 parameters
//   Variable e = emb(Variable(token_ids));         // int64 [8, 20] -> float32 [8, 20, 64]
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct EmbeddingOptions {
  Initializer embeddings_initializer =
      initializers::RandomUniform(-0.05, 0.05);  // Keras's "uniform"
  Regularizer embeddings_regularizer{};
  bool mask_zero = false;  // index 0 is padding: the output's mask is indices != 0
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// A token embedding a model's output head can share (weight tying, models::GPT): the logits of
// h against every row of the table. h [..., output_dim] -> [..., input_dim].
class TiedEmbedding {
 public:
  virtual ~TiedEmbedding() = default;
  virtual Variable reverse(const Variable& h) = 0;
};

class Embedding : public SingleInputLayer, public TiedEmbedding {
 public:
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  int64_t input_dim() const { return input_dim_; }
  int64_t output_dim() const { return output_dim_; }
  const Variable& embeddings() const { return embeddings_; }
  // h · embeddings^T in h's dtype (the table cast to it), differentiable in both.
  Variable reverse(const Variable& h) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  bool mask_zero() const { return options_.mask_zero; }
  bool supports_masking() const override { return options_.mask_zero; }
  Tensor compute_mask(const std::vector<Variable>& inputs, const Tensor& mask) const override;

 protected:
  // Indices, not activations: a 16-bit policy must not round them.
  bool autocasts_inputs() const override { return false; }
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

// The mask of Embedding(mask_zero) for token ids [...]: bool, true where an id is not 0.
Tensor nonzero_ids_mask(const Tensor& ids);

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Embedding> Embedding(int64_t input_dim, int64_t output_dim,
                                             nn::EmbeddingOptions options = {}) {
  return nn::make_layer<nn::Embedding>(input_dim, output_dim, std::move(options));
}
}  // namespace osprey::layers
