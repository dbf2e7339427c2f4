// RandomFlip: in training, flips each image of a batch left-right and/or top-bottom at random, as
// keras.layers.RandomFlip; the identity in inference. Images are [N, H, W, C] (channels_last) or
// [N, H, W]. In "horizontal_and_vertical" mode the two flips are drawn independently, so each
// image is left as is, mirrored, flipped upside down or turned by 180 degrees. Each training call
// draws fresh flips, seeded like Dropout (osprey::next_seed(), or seed + the call count). The
// output is a constant: put the layer on the model's inputs, before any layer with weights.
//   auto flip = layers::RandomFlip("horizontal");
//   Variable y = flip(images, /*training=*/true);  // about half the images mirrored
#pragma once

#include <optional>
#include <string>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct RandomFlipOptions {
  std::optional<uint64_t> seed{};  // none: draw from the global seed
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomFlip : public SingleInputLayer {
 public:
  // mode: "horizontal" (left-right), "vertical" (top-bottom) or "horizontal_and_vertical".
  explicit RandomFlip(std::string mode = "horizontal_and_vertical", RandomFlipOptions options = {});
  const std::string& mode() const { return mode_; }
  const std::optional<uint64_t>& seed() const { return options_.seed; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

  uint64_t seed_calls() const override { return calls_; }
  void set_seed_calls(uint64_t calls) override { calls_ = calls; }

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  std::string mode_;
  bool horizontal_ = false, vertical_ = false;
  RandomFlipOptions options_;
  uint64_t calls_ = 0;  // training calls so far, for a layer with its own seed
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::RandomFlip> RandomFlip(std::string mode = "horizontal_and_vertical",
                                               nn::RandomFlipOptions options = {}) {
  return nn::make_layer<nn::RandomFlip>(std::move(mode), std::move(options));
}
}  // namespace osprey::layers
