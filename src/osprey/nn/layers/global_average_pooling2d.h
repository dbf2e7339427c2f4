// GlobalAveragePooling2D: the mean over the spatial axes, as keras.layers.GlobalAveragePooling2D.
// x [N, H, W, C] (channels_last) or [N, C, H, W] -> [N, C], or [N, 1, 1, C] / [N, C, 1, 1] with
// keepdims.
//   auto gap = layers::GlobalAveragePooling2D();
//   Variable v = gap(features);   // [8, 7, 7, 512] -> [8, 512]
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct GlobalAveragePooling2DOptions {
  std::string data_format = "channels_last";  // or "channels_first"
  bool keepdims = false;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class GlobalAveragePooling2D : public SingleInputLayer {
 public:
  explicit GlobalAveragePooling2D(GlobalAveragePooling2DOptions options = {});
  const GlobalAveragePooling2DOptions& options() const { return options_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  void check_input_shape(const Shape& s) const;
  GlobalAveragePooling2DOptions options_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::GlobalAveragePooling2D> GlobalAveragePooling2D(
    nn::GlobalAveragePooling2DOptions options = {}) {
  return nn::make_layer<nn::GlobalAveragePooling2D>(std::move(options));
}
}  // namespace osprey::layers
