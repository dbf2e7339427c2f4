// Reshape: each sample to target_shape (the batch axis is kept), as keras.layers.Reshape. One
// size may be -1, inferred from the others; the total size per sample must not change.
//   auto r = layers::Reshape({7, 7, -1});
//   Variable y = r(x);   // [8, 196] -> [8, 7, 7, 4]
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct ReshapeOptions {
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Reshape : public SingleInputLayer {
 public:
  explicit Reshape(Shape target_shape, ReshapeOptions options = {});
  const Shape& target_shape() const { return target_shape_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  Shape target_shape_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Reshape> Reshape(Shape target_shape, nn::ReshapeOptions options = {}) {
  return nn::make_layer<nn::Reshape>(target_shape, std::move(options));
}
}  // namespace osprey::layers
