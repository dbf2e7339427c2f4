// TimeDistributed: keras.layers.TimeDistributed, a layer applied to every time step of
// [batch, T, ...] with the same weights. The time axis is folded into the batch (one call of
// the inner layer on [batch * T, ...], then the result unfolded), so each step sees exactly
// what the layer alone would. The inner layer is used as given (not copied); its weights live
// under the wrapper: time_distributed/dense/kernel.
//   auto td = layers::TimeDistributed(layers::Dense(8));
//   Variable y = td(x);                     // [4, 10, 16] -> [4, 10, 8]
//   layers::TimeDistributed(layers::Conv2D(...))(frames);  // [B, T, H, W, C] video frames
#pragma once

#include <memory>
#include <string>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct TimeDistributedOptions {
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class TimeDistributed : public SingleInputLayer {
 public:
  explicit TimeDistributed(std::shared_ptr<Layer> layer, TimeDistributedOptions options = {});
  const std::shared_ptr<Layer>& layer() const { return layer_; }

  std::vector<std::shared_ptr<Layer>> sublayers() const override { return {layer_}; }
  void set_path_prefix(const std::string& prefix) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  // Each step is kept or masked as a whole: a [batch, T] mask passes on to the output.
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const std::vector<Variable>& /*inputs*/, const Tensor& mask) const override {
    return mask.defined() && mask.ndim() <= 2 ? mask : Tensor();
  }

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;

 private:
  void check_input_shape(const Shape& s) const;
  std::shared_ptr<Layer> layer_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::TimeDistributed> TimeDistributed(std::shared_ptr<nn::Layer> layer,
                                                         nn::TimeDistributedOptions options = {}) {
  return nn::make_layer<nn::TimeDistributed>(std::move(layer), std::move(options));
}
}  // namespace osprey::layers
