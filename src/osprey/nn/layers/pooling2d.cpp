#include "osprey/nn/layers/pooling2d.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/layers/spatial.h"

namespace osprey::nn {

Pooling2D::Pooling2D(std::string class_name, std::array<int64_t, 2> pool_size,
                     Pooling2DOptions options)
    : SingleInputLayer(class_name, base_options(options)),
      pool_size_(pool_size),
      options_(std::move(options)) {
  detail::check_positive_pair(pool_size, "pool_size", class_name);
  if (options_.strides[0] == 0 && options_.strides[1] == 0) options_.strides = pool_size;
  detail::check_positive_pair(options_.strides, "strides", class_name);
  detail::check_padding(options_.padding, class_name);
  detail::kernel_data_format(options_.data_format, class_name);
}

Pool2dOptions Pooling2D::pool_options() const {
  return {.pool_size = pool_size_,
          .strides = options_.strides,
          .padding = options_.padding,
          .data_format = detail::kernel_data_format(options_.data_format, name())};
}

void Pooling2D::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() == 4, "{}: expected a 4-D input {}. Received: {}", name(),
               options_.data_format == "channels_last" ? "[batch, height, width, channels]"
                                                       : "[batch, channels, height, width]",
               s.to_string());
}

Shape Pooling2D::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  check_input_shape(input_shapes[0]);
  return detail::with_batch(input_shapes[0], [&](const Shape& s) {
    return pool2d_output_shape(s, resolve_pool2d(s, pool_options(), name().c_str()));
  });
}

nlohmann::json Pooling2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["pool_size"] = detail::pair_json(pool_size_);
  c["strides"] = detail::pair_json(options_.strides);
  c["padding"] = options_.padding;
  c["data_format"] = options_.data_format;
  return c;
}

Pooling2DOptions Pooling2D::read_options(const nlohmann::json& c) {
  Pooling2DOptions o;
  read_base_options(c, o);
  o.strides = detail::read_pair(c, "strides", {0, 0});
  o.padding = c.value("padding", std::string("valid"));
  o.data_format = c.value("data_format", std::string("channels_last"));
  return o;
}

MaxPooling2D::MaxPooling2D(std::array<int64_t, 2> pool_size, Pooling2DOptions options)
    : Pooling2D("MaxPooling2D", pool_size, std::move(options)) {}

Variable MaxPooling2D::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  return autograd::max_pool2d(x, pool_options());
}

std::shared_ptr<Layer> MaxPooling2D::from_config(const nlohmann::json& c) {
  return std::make_shared<MaxPooling2D>(detail::read_pair(c, "pool_size", {2, 2}), read_options(c));
}

AveragePooling2D::AveragePooling2D(std::array<int64_t, 2> pool_size, Pooling2DOptions options)
    : Pooling2D("AveragePooling2D", pool_size, std::move(options)) {}

Variable AveragePooling2D::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  return autograd::avg_pool2d(x, pool_options());
}

std::shared_ptr<Layer> AveragePooling2D::from_config(const nlohmann::json& c) {
  return std::make_shared<AveragePooling2D>(detail::read_pair(c, "pool_size", {2, 2}),
                                            read_options(c));
}

}  // namespace osprey::nn
