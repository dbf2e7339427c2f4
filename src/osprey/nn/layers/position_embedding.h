// PositionEmbedding, as keras_hub.layers.PositionEmbedding: a learned vector per position
// (GPT-2's and nanoGPT's wpe), a trainable table `embeddings` [sequence_length, features] whose
// first T rows are added to a [batch, T, features] sequence. Called as a layer it returns the
// position vectors broadcast to the input's shape (Keras's result, for the functional API);
// positions() returns the [T, features] rows alone, which a model adds with broadcasting, and
// takes the start index a decoder with a key/value cache needs for its next token.
//   auto pos = layers::PositionEmbedding(256);
//   Variable h = tokens_embedded + pos(tokens_embedded);     // [8, 100, 384]
//   Variable step = pos->positions(/*length=*/1, /*start=*/100);  // [1, 384]: position 100
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct PositionEmbeddingOptions {
  Initializer initializer = "glorot_uniform";  // keras_hub's default
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class PositionEmbedding : public SingleInputLayer {
 public:
  bool supports_masking() const override { return true; }  // passes the mask on
  explicit PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions options = {});
  int64_t sequence_length() const { return sequence_length_; }
  const Variable& embeddings() const { return embeddings_; }
  // Rows [start, start + length) of the table, in compute_dtype(): ValueError naming the layer
  // when they run past sequence_length. The layer must be built.
  Variable positions(int64_t length, int64_t start = 0);
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  void check_input_shape(const Shape& s) const;
  int64_t sequence_length_;
  PositionEmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::PositionEmbedding> PositionEmbedding(
    int64_t sequence_length, nn::PositionEmbeddingOptions options = {}) {
  return nn::make_layer<nn::PositionEmbedding>(sequence_length, std::move(options));
}
}  // namespace osprey::layers
