// The 1-D pooling layers of keras.layers, for sequences x [N, T, C] (channels_last, default) or
// [N, C, T]: MaxPooling1D and AveragePooling1D slide a window over the steps (run as 2-D pooling
// of height 1, on oneDNN); GlobalAveragePooling1D and GlobalMaxPooling1D reduce the steps away
// ([N, C], or [N, 1, C] / [N, C, 1] with keepdims).
//   auto pool = layers::MaxPooling1D(2);              // strides default to the pool size
//   Variable y = pool(x);                             // [8, 100, 64] -> [8, 50, 64]
//   Variable v = layers::GlobalAveragePooling1D()(y); // [8, 50, 64] -> [8, 64]
#pragma once

#include "osprey/nn/layer.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

struct Pooling1DOptions {
  int64_t strides = 0;            // 0: the pool size, as Keras's strides=None
  std::string padding = "valid";  // "valid" or "same"
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Pooling1D : public SingleInputLayer {
 public:
  Pooling1D(std::string class_name, int64_t pool_size, Pooling1DOptions options);
  int64_t pool_size() const { return pool_size_; }
  const Pooling1DOptions& options() const { return options_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;

 protected:
  // max_pool2d or avg_pool2d on the [N, 1, T, C] (or [N, C, 1, T]) view.
  Variable pool(const Variable& x, Variable (*pool2d)(const Variable&, const Pool2dOptions&)) const;
  static Pooling1DOptions read_options(const nlohmann::json& c);

 private:
  void check_input_shape(const Shape& s) const;
  Shape as_2d(const Shape& s) const;
  Shape from_2d(const Shape& y) const;
  Pool2dOptions pool_options() const;

  int64_t pool_size_;
  Pooling1DOptions options_;
};

class MaxPooling1D : public Pooling1D {
 public:
  explicit MaxPooling1D(int64_t pool_size = 2, Pooling1DOptions options = {});
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;
};

class AveragePooling1D : public Pooling1D {
 public:
  explicit AveragePooling1D(int64_t pool_size = 2, Pooling1DOptions options = {});
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);

 protected:
  Variable call_single(const Variable& x, bool training) override;
};

struct GlobalPooling1DOptions {
  std::string data_format = "channels_last";  // or "channels_first"
  bool keepdims = false;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// GlobalAveragePooling1D and GlobalMaxPooling1D: the mean or maximum over the steps; under a
// mask (Variable::mask()) over the real steps only, and the mask ends here.
class GlobalPooling1D : public SingleInputLayer {
 public:
  GlobalPooling1D(std::string class_name, bool average, GlobalPooling1DOptions options);
  const GlobalPooling1DOptions& options() const { return options_; }
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const std::vector<Variable>& /*inputs*/,
                      const Tensor& /*mask*/) const override {
    return {};
  }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;

 protected:
  Variable call_single(const Variable& x, bool training) override;
  static GlobalPooling1DOptions read_options(const nlohmann::json& c);

 private:
  void check_input_shape(const Shape& s) const;
  int steps_axis() const { return options_.data_format == "channels_last" ? 1 : 2; }

  bool average_;
  GlobalPooling1DOptions options_;
};

class GlobalAveragePooling1D : public GlobalPooling1D {
 public:
  explicit GlobalAveragePooling1D(GlobalPooling1DOptions options = {})
      : GlobalPooling1D("GlobalAveragePooling1D", true, std::move(options)) {}
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
};

class GlobalMaxPooling1D : public GlobalPooling1D {
 public:
  explicit GlobalMaxPooling1D(GlobalPooling1DOptions options = {})
      : GlobalPooling1D("GlobalMaxPooling1D", false, std::move(options)) {}
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::MaxPooling1D> MaxPooling1D(int64_t pool_size = 2,
                                                   nn::Pooling1DOptions options = {}) {
  return nn::make_layer<nn::MaxPooling1D>(pool_size, std::move(options));
}
inline nn::LayerRef<nn::AveragePooling1D> AveragePooling1D(int64_t pool_size = 2,
                                                           nn::Pooling1DOptions options = {}) {
  return nn::make_layer<nn::AveragePooling1D>(pool_size, std::move(options));
}
inline nn::LayerRef<nn::GlobalAveragePooling1D> GlobalAveragePooling1D(
    nn::GlobalPooling1DOptions options = {}) {
  return nn::make_layer<nn::GlobalAveragePooling1D>(std::move(options));
}
inline nn::LayerRef<nn::GlobalMaxPooling1D> GlobalMaxPooling1D(
    nn::GlobalPooling1DOptions options = {}) {
  return nn::make_layer<nn::GlobalMaxPooling1D>(std::move(options));
}
}  // namespace osprey::layers
