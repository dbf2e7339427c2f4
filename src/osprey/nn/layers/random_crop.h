// RandomCrop: in training, cuts a height x width window at a random place out of each image of a
// batch (each image its own place), as keras.layers.RandomCrop. In inference, and in training
// when an image is smaller than the window, it takes the largest centred window with the target
// aspect ratio and resizes it to height x width (bilinear, half-pixel centres, as
// keras.ops.image.resize); an input already of the target size passes through unchanged.
// Images are [N, H, W, C] -> [N, height, width, C], or [N, H, W] -> [N, height, width]; seeds as
// Dropout; the training output is a constant.
//   auto crop = layers::RandomCrop(24, 24);
//   Variable y = crop(images, /*training=*/true);  // [N, 28, 28, 1] -> [N, 24, 24, 1]
#pragma once

#include <optional>
#include <string>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct RandomCropOptions {
  std::optional<uint64_t> seed{};  // none: draw from the global seed
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomCrop : public SingleInputLayer {
 public:
  RandomCrop(int64_t height, int64_t width, RandomCropOptions options = {});
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  const std::optional<uint64_t>& seed() const { return options_.seed; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

  uint64_t seed_calls() const override { return calls_; }
  void set_seed_calls(uint64_t calls) override { calls_ = calls; }

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  // The centred window with the target aspect ratio, resized to height x width.
  Tensor center_crop_and_resize(const Tensor& images) const;

  int64_t height_, width_;
  RandomCropOptions options_;
  uint64_t calls_ = 0;  // training calls so far, for a layer with its own seed
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::RandomCrop> RandomCrop(int64_t height, int64_t width,
                                               nn::RandomCropOptions options = {}) {
  return nn::make_layer<nn::RandomCrop>(height, width, std::move(options));
}
}  // namespace osprey::layers
