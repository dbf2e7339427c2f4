// QuantizedEmbedding: the int8 form of nn::Embedding that quant::quantize() swaps in. The table is
// int8 [input_dim, output_dim] with one float32 scale per row (the seeds' abs-max formula over the
// row: each token's vector keeps its own range), a quarter of the float32 bytes; a lookup gathers
// the int8 rows and their scales and dequantizes only those (row_q / row_scale) to float32.
//   auto q = quant::QuantizedEmbedding::from_embedding(emb);   // emb: a built nn::Embedding
//   Variable e = (*q)(Variable(ids));                           // int64 [8, 20] -> float32 [8, 20,
//   dim]
// As a tied head (models::GPT) it answers TiedEmbedding::reverse from the same int8 table: the
// logits h · table^T run as QuantizedDense's product, whose per-output-column scales are exactly
// the table's per-row ones, so the table is quantized once and the model holds no float32 copy.
// Weights keep Embedding's path: ".../embedding/embeddings" (int8), plus ".../embeddings_scale".
#pragma once

#include <memory>

#include "osprey/nn/layer.h"
#include "osprey/nn/layers/embedding.h"

namespace osprey::quant {

using autograd::Variable;

class QuantizedEmbedding : public nn::SingleInputLayer, public nn::TiedEmbedding {
 public:
  // mask_zero: index 0 is padding, as the Embedding it replaces said (its output's mask).
  QuantizedEmbedding(int64_t input_dim, int64_t output_dim, const nn::LayerOptions& options,
                     bool mask_zero = false);
  // A built QuantizedEmbedding with emb's name and quantized table; ValueError when emb is not
  // built.
  static std::shared_ptr<QuantizedEmbedding> from_embedding(const nn::Embedding& emb);

  const Variable& embeddings() const { return embeddings_; }  // int8 [input_dim, output_dim]
  const Variable& embeddings_scale() const { return embeddings_scale_; }  // float32 [input_dim]
  // h [..., output_dim] (float) -> float32 [..., input_dim] through linear_int8; no gradient.
  Variable reverse(const Variable& h) override;

  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  bool supports_masking() const override { return mask_zero_; }
  Tensor compute_mask(const std::vector<Variable>& inputs, const Tensor& mask) const override;
  // input_dim, output_dim, mask_zero and "quantization_mode": "int8".
  nlohmann::json get_config() const override;
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  // Indices, not activations: a 16-bit policy must not round them.
  bool autocasts_inputs() const override { return false; }
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  int64_t input_dim_, output_dim_;
  bool mask_zero_;
  Variable embeddings_, embeddings_scale_;
  // The int8 table transposed to [output_dim, input_dim], contiguous as the int8 product reads
  // it, made on the first reverse() and again whenever the table changes (a load); not a weight.
  Tensor transposed_;
  uint64_t transposed_version_ = 0;
};

}  // namespace osprey::quant
