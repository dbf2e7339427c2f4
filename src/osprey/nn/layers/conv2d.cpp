#include "osprey/nn/layers/conv2d.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/layers/spatial.h"

namespace osprey::nn {

Conv2D::Conv2D(int64_t filters, std::array<int64_t, 2> kernel_size, Conv2DOptions options)
    : Conv2D("Conv2D", filters, kernel_size, std::move(options)) {}

Conv2D::Conv2D(std::string class_name, int64_t filters, std::array<int64_t, 2> kernel_size,
               Conv2DOptions options)
    : SingleInputLayer(std::move(class_name), base_options(options)),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  OSPREY_CHECK(filters > 0, "Conv2D: filters must be positive. Received: filters={}", filters);
  detail::check_positive_pair(kernel_size, "kernel_size", "Conv2D");
  detail::check_positive_pair(options_.strides, "strides", "Conv2D");
  detail::check_positive_pair(options_.dilation_rate, "dilation_rate", "Conv2D");
  detail::check_padding(options_.padding, "Conv2D");
  detail::kernel_data_format(options_.data_format, "Conv2D");
  OSPREY_CHECK(options_.groups >= 1 && filters % options_.groups == 0,
               "Conv2D: filters must be divisible by groups. Received: filters={}, groups={}",
               filters, options_.groups);
}

Conv2dOptions Conv2D::conv_options() const {
  return {.strides = options_.strides,
          .padding = options_.padding,
          .dilation = options_.dilation_rate,
          .groups = options_.groups,
          .data_format = detail::kernel_data_format(options_.data_format, name())};
}

void Conv2D::check_input_shape(const Shape& s) const {
  (void)detail::conv_input_channels(s, options_.data_format, options_.groups, name());
}

void Conv2D::build_single(const Shape& input_shape) {
  check_input_shape(input_shape);
  const int64_t c = options_.data_format == "channels_last" ? input_shape[3] : input_shape[1];
  kernel_ = add_weight("kernel", {kernel_size_[0], kernel_size_[1], c / options_.groups, filters_},
                       options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias) {
    bias_ =
        add_weight("bias", {filters_}, options_.bias_initializer, true, options_.bias_regularizer);
  }
}

Shape Conv2D::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  check_input_shape(input_shapes[0]);
  const int64_t c =
      options_.data_format == "channels_last" ? input_shapes[0][3] : input_shapes[0][1];
  const Shape w{kernel_size_[0], kernel_size_[1], c / options_.groups, filters_};
  return detail::with_batch(input_shapes[0], [&](const Shape& s) {
    return conv2d_output_shape(s, w, resolve_conv2d(s, w, conv_options()));
  });
}

Variable Conv2D::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  // relu, sigmoid and tanh run inside the convolution kernel (one pass over the output, not two);
  // other activations after it.
  const Activation a = options_.activation.fused();
  const bool fuse = a == Activation::relu || a == Activation::sigmoid || a == Activation::tanh;
  Conv2dParams p = resolve_conv2d(x.shape(), kernel_.shape(), conv_options());
  if (fuse) p.activation = a;
  Variable y = autograd::conv2d(x, autocast(kernel_), autocast(bias_), p);
  return fuse ? y : options_.activation(y);
}

nlohmann::json Conv2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["filters"] = filters_;
  c["kernel_size"] = detail::pair_json(kernel_size_);
  c["strides"] = detail::pair_json(options_.strides);
  c["padding"] = options_.padding;
  c["data_format"] = options_.data_format;
  c["dilation_rate"] = detail::pair_json(options_.dilation_rate);
  c["groups"] = options_.groups;
  c["activation"] = options_.activation.name();
  write_kernel_bias_config(c, options_);
  return c;
}

std::shared_ptr<Layer> Conv2D::from_config(const nlohmann::json& c) {
  Conv2DOptions o;
  read_base_options(c, o);
  o.strides = detail::read_pair(c, "strides", {1, 1});
  o.padding = c.value("padding", std::string("valid"));
  o.data_format = c.value("data_format", std::string("channels_last"));
  o.dilation_rate = detail::read_pair(c, "dilation_rate", {1, 1});
  o.groups = c.value("groups", int64_t{1});
  o.activation = c.value("activation", std::string("linear"));
  read_kernel_bias_config(c, o);
  return std::make_shared<Conv2D>(c.at("filters").get<int64_t>(),
                                  detail::read_pair(c, "kernel_size", {0, 0}), o);
}

}  // namespace osprey::nn
