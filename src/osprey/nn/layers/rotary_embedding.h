// RotaryEmbedding, as keras_hub.layers.RotaryEmbedding (RoPE, Su et al. 2021): rotates each pair
// of features (i, i + d/2) of the query or key at position p by the angle p * w_i, with
// w_i = 1 / (max_wavelength^(2i / d) * scaling_factor), so that a query-key product depends on
// the positions only through their difference. No weights. x is [batch, T, ..., d] with the
// sequence on sequence_axis (1) and the features on the last axis; start_index shifts the
// positions for a decoder step over a key/value cache.
//   auto rope = layers::RotaryEmbedding();
//   Variable q_rot = rope(q);                         // q [8, 128, 4, 64]: positions 0..127
//   Variable k_step = rope->rotate(k, /*start_index=*/128);
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct RotaryEmbeddingOptions {
  double max_wavelength = 10000;
  double scaling_factor = 1.0;
  int sequence_axis = 1;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RotaryEmbedding : public SingleInputLayer {
 public:
  bool supports_masking() const override { return true; }  // passes the mask on
  explicit RotaryEmbedding(RotaryEmbeddingOptions options = {});
  // x rotated for positions start_index, start_index + 1, ... along sequence_axis.
  Variable rotate(const Variable& x, int64_t start_index = 0);
  const RotaryEmbeddingOptions& options() const { return options_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  void check_input_shape(const Shape& s) const;
  RotaryEmbeddingOptions options_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::RotaryEmbedding> RotaryEmbedding(nn::RotaryEmbeddingOptions options = {}) {
  return nn::make_layer<nn::RotaryEmbedding>(std::move(options));
}
}  // namespace osprey::layers
