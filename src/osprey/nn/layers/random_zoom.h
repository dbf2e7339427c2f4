// RandomZoom: in training, zooms each image of a batch in or out by its own random amount about
// the image centre, as keras.layers.RandomZoom; the identity in inference. A height factor pair
// (lower, upper) draws a zoom z = 1 + uniform(lower, upper): z > 1 (a positive factor) zooms out,
// z < 1 zooms in; a single f means (-f, f). Without a width factor the width zooms by the same z,
// keeping the aspect ratio. Uncovered pixels are filled by fill_mode; samples between pixels are
// interpolated. Images are [N, H, W, C] or [N, H, W]; seeds as Dropout; the output is a constant.
//   auto zoom = layers::RandomZoom(0.1);  // up to 10% in or out
//   Variable y = zoom(images, /*training=*/true);
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct RandomZoomOptions {
  // none: the height's zoom, keeping the aspect ratio
  std::optional<std::pair<double, double>> width_factor{};
  std::string fill_mode = "reflect";       // reflect, wrap, constant, nearest
  std::string interpolation = "bilinear";  // bilinear, nearest
  double fill_value = 0.0;                 // for fill_mode constant
  std::optional<uint64_t> seed{};          // none: draw from the global seed
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomZoom : public SingleInputLayer {
 public:
  explicit RandomZoom(double height_factor, RandomZoomOptions options = {});
  RandomZoom(std::pair<double, double> height_factor, RandomZoomOptions options = {});
  const std::pair<double, double>& height_factor() const { return height_factor_; }
  const std::optional<std::pair<double, double>>& width_factor() const {
    return options_.width_factor;
  }
  const std::string& fill_mode() const { return options_.fill_mode; }
  const std::string& interpolation() const { return options_.interpolation; }
  double fill_value() const { return options_.fill_value; }
  const std::optional<uint64_t>& seed() const { return options_.seed; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

  uint64_t seed_calls() const override { return calls_; }
  void set_seed_calls(uint64_t calls) override { calls_ = calls; }

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  std::pair<double, double> height_factor_;
  RandomZoomOptions options_;
  uint64_t calls_ = 0;  // training calls so far, for a layer with its own seed
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::RandomZoom> RandomZoom(double height_factor,
                                               nn::RandomZoomOptions options = {}) {
  return nn::make_layer<nn::RandomZoom>(height_factor, std::move(options));
}
inline nn::LayerRef<nn::RandomZoom> RandomZoom(std::pair<double, double> height_factor,
                                               nn::RandomZoomOptions options = {}) {
  return nn::make_layer<nn::RandomZoom>(height_factor, std::move(options));
}
}  // namespace osprey::layers
