// Dropout: in training, zeroes each element with probability `rate` and scales the rest by
// 1 / (1 - rate), as keras.layers.Dropout; the identity in inference. Each training call uses a
// fresh mask: its seed comes from osprey::next_seed() (so a run is reproducible given
// osprey::set_global_seed), or, when the layer has its own seed, seed + the call count.
//   auto drop = layers::Dropout(0.5);
//   Variable h = drop(x, /*training=*/true);   // about half zeroed, the rest doubled
#pragma once

#include <optional>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct DropoutOptions {
  std::optional<uint64_t> seed{};  // none: draw from the global seed
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Dropout : public SingleInputLayer {
 public:
  bool supports_masking() const override { return true; }  // passes the mask on
  explicit Dropout(double rate, DropoutOptions options = {});
  double rate() const { return rate_; }
  const std::optional<uint64_t>& seed() const { return options_.seed; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

  uint64_t seed_calls() const override { return calls_; }
  void set_seed_calls(uint64_t calls) override { calls_ = calls; }

 protected:
  Variable call_single(const Variable& x, bool training) override;

 private:
  double rate_;
  DropoutOptions options_;
  uint64_t calls_ = 0;  // training calls so far, for a layer with its own seed
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Dropout> Dropout(double rate, nn::DropoutOptions options = {}) {
  return nn::make_layer<nn::Dropout>(rate, std::move(options));
}
}  // namespace osprey::layers
