// Concatenate: inputs joined along one axis (the last by default), as keras.layers.Concatenate.
// Every other axis must match.
//   auto cat = layers::Concatenate();
//   Variable y = cat(std::vector<Variable>{a, b});   // [8, 3] and [8, 5] -> [8, 8]
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct ConcatenateOptions {
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Concatenate : public Layer {
 public:
  explicit Concatenate(int axis = -1, ConcatenateOptions options = {});
  int axis() const { return axis_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  // Along the steps axis the masks are joined; along another, a step is real where it is real in
  // every input (masking.h).
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const std::vector<Variable>& inputs, const Tensor& mask) const override;

 protected:
  void build_impl(const std::vector<Shape>& input_shapes) override;
  Variable call(const std::vector<Variable>& inputs, bool training) override;

 private:
  int axis_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Concatenate> Concatenate(int axis = -1,
                                                 nn::ConcatenateOptions options = {}) {
  return nn::make_layer<nn::Concatenate>(axis, std::move(options));
}
}  // namespace osprey::layers
