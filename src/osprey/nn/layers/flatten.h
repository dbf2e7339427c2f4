// Flatten: every axis but the batch one folded into one, as keras.layers.Flatten.
// x [N, d1, ..., dk] -> [N, d1 * ... * dk] ([N] -> [N, 1]). With data_format "channels_first" a
// rank >= 3 input is first moved to channels-last order, so the flattened features line up with
// a channels_last model's.
//   Variable h = layers::Flatten()(x);   // [8, 7, 7, 64] -> [8, 3136]
#pragma once

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct FlattenOptions {
  std::string data_format = "channels_last";  // or "channels_first"
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Flatten : public SingleInputLayer {
 public:
  explicit Flatten(FlattenOptions options = {});
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  FlattenOptions options_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Flatten> Flatten(nn::FlattenOptions options = {}) {
  return nn::make_layer<nn::Flatten>(std::move(options));
}
}  // namespace osprey::layers
