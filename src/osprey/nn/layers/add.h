// Add: the elementwise sum of two or more inputs of one shape, as keras.layers.Add.
//   auto add = layers::Add();
//   Variable y = add(std::vector<Variable>{x, shortcut});   // a residual connection
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct AddOptions {
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Add : public Layer {
 public:
  explicit Add(AddOptions options = {});
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  // A step is real where it is real in every input (merge_masks, masking.h).
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const std::vector<Variable>& inputs, const Tensor& mask) const override;

 protected:
  void build_impl(const std::vector<Shape>& input_shapes) override;
  Variable call(const std::vector<Variable>& inputs, bool training) override;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Add> Add(nn::AddOptions options = {}) {
  return nn::make_layer<nn::Add>(std::move(options));
}
}  // namespace osprey::layers
