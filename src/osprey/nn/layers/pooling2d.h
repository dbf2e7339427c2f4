// MaxPooling2D and AveragePooling2D, as keras.layers: a window slides over the spatial axes of
// x [N, H, W, C] (channels_last, default) or [N, C, H, W] and keeps each window's maximum or mean
// (the mean of the real, unpadded elements). Both share Pooling2D, which holds the geometry.
//   auto pool = layers::MaxPooling2D(2);          // strides default to the pool size
//   Variable y = pool(x);                         // [8, 28, 28, 32] -> [8, 14, 14, 32]
#pragma once

#include <array>

#include "osprey/nn/layer.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

struct Pooling2DOptions {
  std::array<int64_t, 2> strides{0, 0};  // {0, 0}: the pool size, as Keras's strides=None
  std::string padding = "valid";         // "valid" or "same"
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Pooling2D : public SingleInputLayer {
 public:
  Pooling2D(std::string class_name, std::array<int64_t, 2> pool_size, Pooling2DOptions options);
  const std::array<int64_t, 2>& pool_size() const { return pool_size_; }
  const std::array<int64_t, 2>& strides() const { return options_.strides; }
  const Pooling2DOptions& options() const { return options_; }
  // The window as the tensor op takes it (QuantizedConv2D runs a folded MaxPooling2D with it).
  Pool2dOptions pool_options() const;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;

 protected:
  void check_input_shape(const Shape& s) const;
  static Pooling2DOptions read_options(const nlohmann::json& c);

 private:
  std::array<int64_t, 2> pool_size_;
  Pooling2DOptions options_;
};

class MaxPooling2D : public Pooling2D {
 public:
  explicit MaxPooling2D(std::array<int64_t, 2> pool_size = {2, 2}, Pooling2DOptions options = {});
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;
};

class AveragePooling2D : public Pooling2D {
 public:
  explicit AveragePooling2D(std::array<int64_t, 2> pool_size = {2, 2},
                            Pooling2DOptions options = {});
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::MaxPooling2D> MaxPooling2D(std::array<int64_t, 2> pool_size = {2, 2},
                                                   nn::Pooling2DOptions options = {}) {
  return nn::make_layer<nn::MaxPooling2D>(pool_size, std::move(options));
}
inline nn::LayerRef<nn::MaxPooling2D> MaxPooling2D(int64_t pool_size,
                                                   nn::Pooling2DOptions options = {}) {
  return MaxPooling2D(std::array<int64_t, 2>{pool_size, pool_size}, std::move(options));
}
inline nn::LayerRef<nn::AveragePooling2D> AveragePooling2D(std::array<int64_t, 2> pool_size = {2,
                                                                                               2},
                                                           nn::Pooling2DOptions options = {}) {
  return nn::make_layer<nn::AveragePooling2D>(pool_size, std::move(options));
}
inline nn::LayerRef<nn::AveragePooling2D> AveragePooling2D(int64_t pool_size,
                                                           nn::Pooling2DOptions options = {}) {
  return AveragePooling2D(std::array<int64_t, 2>{pool_size, pool_size}, std::move(options));
}
}  // namespace osprey::layers
