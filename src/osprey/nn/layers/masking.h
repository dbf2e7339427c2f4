// Masking: marks padded steps of a sequence of feature vectors, as keras.layers.Masking. A step
// whose features all equal mask_value is padding: its output is zeros and the output's mask
// (Variable::mask(), bool [batch, steps]) is false there, so the recurrent layers, attention,
// pooling, the loss and the metrics after it skip it. For token ids, Embedding(mask_zero) makes
// the mask instead.
//   auto masking = layers::Masking(0.0);
//   Variable y = masking(x);   // x [32, 100, 8]; y.mask() [32, 100]: any(x != 0, axis=-1)
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct MaskingOptions {
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Masking : public SingleInputLayer {
 public:
  explicit Masking(double mask_value = 0.0, MaskingOptions options = {});
  double mask_value() const { return mask_value_; }
  bool supports_masking() const override { return true; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  double mask_value_;
};

// The masks of several inputs merged, as Keras's merge layers do: a step is real where it is real
// in every input that has a mask; undefined when none has one. Add, and Concatenate along the
// features.
Tensor merge_masks(const std::vector<Variable>& inputs);
// Concatenate along the steps axis (1): the masks joined along it, all real for an input without
// one; undefined when none has one.
Tensor concat_masks(const std::vector<Variable>& inputs);

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Masking> Masking(double mask_value = 0.0, nn::MaskingOptions options = {}) {
  return nn::make_layer<nn::Masking>(mask_value, std::move(options));
}
}  // namespace osprey::layers
