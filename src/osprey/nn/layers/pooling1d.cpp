#include "osprey/nn/layers/pooling1d.h"

#include <limits>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/layers/spatial.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

namespace {

const char* steps_layout(const std::string& data_format) {
  return data_format == "channels_last" ? "[batch, steps, channels]" : "[batch, channels, steps]";
}

}  // namespace

Pooling1D::Pooling1D(std::string class_name, int64_t pool_size, Pooling1DOptions options)
    : SingleInputLayer(class_name, base_options(options)),
      pool_size_(pool_size),
      options_(std::move(options)) {
  OSPREY_CHECK(pool_size > 0, "{}: pool_size must be positive. Received: pool_size={}", class_name,
               pool_size);
  if (options_.strides == 0) options_.strides = pool_size;
  OSPREY_CHECK(options_.strides > 0, "{}: strides must be positive. Received: strides={}",
               class_name, options_.strides);
  detail::check_padding(options_.padding, class_name);
  detail::kernel_data_format(options_.data_format, class_name);
}

void Pooling1D::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() == 3, "{}: expected a 3-D input {}. Received: {}", name(),
               steps_layout(options_.data_format), s.to_string());
}

Shape Pooling1D::as_2d(const Shape& s) const {
  return options_.data_format == "channels_last" ? Shape{s[0], 1, s[1], s[2]}
                                                 : Shape{s[0], s[1], 1, s[2]};
}

Shape Pooling1D::from_2d(const Shape& y) const {
  return options_.data_format == "channels_last" ? Shape{y[0], y[2], y[3]}
                                                 : Shape{y[0], y[1], y[3]};
}

Pool2dOptions Pooling1D::pool_options() const {
  return {.pool_size = {1, pool_size_},
          .strides = {1, options_.strides},
          .padding = options_.padding,
          .data_format = detail::kernel_data_format(options_.data_format, name())};
}

Shape Pooling1D::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  check_input_shape(input_shapes[0]);
  return detail::with_batch(input_shapes[0], [&](const Shape& s) {
    const Shape x2d = as_2d(s);
    return from_2d(pool2d_output_shape(x2d, resolve_pool2d(x2d, pool_options(), name().c_str())));
  });
}

Variable Pooling1D::pool(const Variable& x,
                         Variable (*pool2d)(const Variable&, const Pool2dOptions&)) const {
  check_input_shape(x.shape());
  const Variable y = pool2d(autograd::reshape(x, as_2d(x.shape())), pool_options());
  return autograd::reshape(y, from_2d(y.shape()));
}

nlohmann::json Pooling1D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["pool_size"] = nlohmann::json::array({pool_size_});  // Keras writes 1-tuples
  c["strides"] = nlohmann::json::array({options_.strides});
  c["padding"] = options_.padding;
  c["data_format"] = options_.data_format;
  return c;
}

Pooling1DOptions Pooling1D::read_options(const nlohmann::json& c) {
  Pooling1DOptions o;
  read_base_options(c, o);
  o.strides = detail::read_single(c, "strides", 0);
  o.padding = c.value("padding", std::string("valid"));
  o.data_format = c.value("data_format", std::string("channels_last"));
  return o;
}

MaxPooling1D::MaxPooling1D(int64_t pool_size, Pooling1DOptions options)
    : Pooling1D("MaxPooling1D", pool_size, std::move(options)) {}

Variable MaxPooling1D::call_single(const Variable& x, bool training) {
  return pool(x, &autograd::max_pool2d);
}

std::shared_ptr<Layer> MaxPooling1D::from_config(const nlohmann::json& c) {
  return std::make_shared<MaxPooling1D>(detail::read_single(c, "pool_size", 2), read_options(c));
}

AveragePooling1D::AveragePooling1D(int64_t pool_size, Pooling1DOptions options)
    : Pooling1D("AveragePooling1D", pool_size, std::move(options)) {}

Variable AveragePooling1D::call_single(const Variable& x, bool training) {
  return pool(x, &autograd::avg_pool2d);
}

std::shared_ptr<Layer> AveragePooling1D::from_config(const nlohmann::json& c) {
  return std::make_shared<AveragePooling1D>(detail::read_single(c, "pool_size", 2),
                                            read_options(c));
}

GlobalPooling1D::GlobalPooling1D(std::string class_name, bool average,
                                 GlobalPooling1DOptions options)
    : SingleInputLayer(class_name, base_options(options)),
      average_(average),
      options_(std::move(options)) {
  detail::kernel_data_format(options_.data_format, class_name);
}

void GlobalPooling1D::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() == 3, "{}: expected a 3-D input {}. Received: {}", name(),
               steps_layout(options_.data_format), s.to_string());
}

Shape GlobalPooling1D::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape& s = input_shapes[0];
  check_input_shape(s);
  const bool last = options_.data_format == "channels_last";
  const int64_t c = last ? s[2] : s[1];
  if (!options_.keepdims) return {s[0], c};
  return last ? Shape{s[0], 1, c} : Shape{s[0], c, 1};
}

Variable GlobalPooling1D::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  const int axis = steps_axis();
  if (!x.mask().defined()) {
    return average_ ? autograd::mean(x, {axis}, options_.keepdims)
                    : autograd::max(x, {axis}, options_.keepdims);
  }
  // Only the real steps count: the mean over them (Keras's masked GlobalAveragePooling1D), or
  // their maximum. A sequence with no real step pools to zeros.
  const Tensor& mask = x.mask();  // [batch, steps]
  const TensorOptions opts{x.dtype(), x.device()};
  const Tensor real = mask.to(x.dtype()).reshape(
      axis == 1 ? Shape{x.size(0), x.size(1), 1} : Shape{x.size(0), 1, x.size(2)});  // broadcasts
  const Tensor count = sum(real, {axis}, /*keepdims=*/true);  // [batch, 1, 1]
  const Tensor any = gt(count, full(Shape{}, 0.0, opts));
  Variable pooled;
  if (average_) {
    const Tensor inverse = div(full(Shape{}, 1.0, opts), maximum(count, full(Shape{}, 1.0, opts)));
    pooled = autograd::mul(autograd::sum(autograd::mul(x, Variable(real)), {axis}, true),
                           Variable(inverse));
  } else {
    const Variable lowest(full(Shape{}, -std::numeric_limits<double>::infinity(), opts));
    const Tensor keep = gt(real, full(Shape{}, 0.0, opts));
    const Variable best = autograd::max(autograd::where(keep, x, lowest), {axis}, true);
    pooled = autograd::where(any, best, Variable(full(Shape{}, 0.0, opts)));
  }
  return options_.keepdims ? pooled : autograd::squeeze(pooled, axis);
}

nlohmann::json GlobalPooling1D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = options_.data_format;
  c["keepdims"] = options_.keepdims;
  return c;
}

GlobalPooling1DOptions GlobalPooling1D::read_options(const nlohmann::json& c) {
  GlobalPooling1DOptions o;
  read_base_options(c, o);
  o.data_format = c.value("data_format", std::string("channels_last"));
  o.keepdims = c.value("keepdims", false);
  return o;
}

std::shared_ptr<Layer> GlobalAveragePooling1D::from_config(const nlohmann::json& c) {
  return std::make_shared<GlobalAveragePooling1D>(read_options(c));
}

std::shared_ptr<Layer> GlobalMaxPooling1D::from_config(const nlohmann::json& c) {
  return std::make_shared<GlobalMaxPooling1D>(read_options(c));
}

}  // namespace osprey::nn
