// RandomTranslation: in training, shifts each image of a batch by its own random offset, as
// keras.layers.RandomTranslation; the identity in inference. Factors are fractions of the height
// and width: a pair (lower, upper) shifts by a uniform amount in [lower, upper] * size (positive:
// down and right), a single f means (-f, f). Uncovered pixels are filled by fill_mode
// (reflect, wrap, constant with fill_value, nearest); fractional shifts interpolate (bilinear or
// nearest). Images are [N, H, W, C] or [N, H, W]; seeds as Dropout; the output is a constant.
//   auto shift = layers::RandomTranslation(0.1, 0.1);  // up to 10% each way
//   Variable y = shift(images, /*training=*/true);
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct RandomTranslationOptions {
  std::string fill_mode = "reflect";       // reflect, wrap, constant, nearest
  std::string interpolation = "bilinear";  // bilinear, nearest
  double fill_value = 0.0;                 // for fill_mode constant
  std::optional<uint64_t> seed{};          // none: draw from the global seed
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomTranslation : public SingleInputLayer {
 public:
  RandomTranslation(double height_factor, double width_factor,
                    RandomTranslationOptions options = {});
  RandomTranslation(std::pair<double, double> height_factor, std::pair<double, double> width_factor,
                    RandomTranslationOptions options = {});
  const std::pair<double, double>& height_factor() const { return height_factor_; }
  const std::pair<double, double>& width_factor() const { return width_factor_; }
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
  std::pair<double, double> height_factor_, width_factor_;
  RandomTranslationOptions options_;
  uint64_t calls_ = 0;  // training calls so far, for a layer with its own seed
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::RandomTranslation> RandomTranslation(
    double height_factor, double width_factor, nn::RandomTranslationOptions options = {}) {
  return nn::make_layer<nn::RandomTranslation>(height_factor, width_factor, std::move(options));
}
inline nn::LayerRef<nn::RandomTranslation> RandomTranslation(
    std::pair<double, double> height_factor, std::pair<double, double> width_factor,
    nn::RandomTranslationOptions options = {}) {
  return nn::make_layer<nn::RandomTranslation>(height_factor, width_factor, std::move(options));
}
}  // namespace osprey::layers
