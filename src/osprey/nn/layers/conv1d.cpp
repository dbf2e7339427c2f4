#include "osprey/nn/layers/conv1d.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/layers/spatial.h"

namespace osprey::nn {

Conv1D::Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options)
    : SingleInputLayer("Conv1D", base_options(options)),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  OSPREY_CHECK(filters > 0, "Conv1D: filters must be positive. Received: filters={}", filters);
  OSPREY_CHECK(kernel_size > 0, "Conv1D: kernel_size must be positive. Received: kernel_size={}",
               kernel_size);
  OSPREY_CHECK(options_.strides > 0, "Conv1D: strides must be positive. Received: strides={}",
               options_.strides);
  OSPREY_CHECK(options_.dilation_rate > 0,
               "Conv1D: dilation_rate must be positive. Received: dilation_rate={}",
               options_.dilation_rate);
  OSPREY_CHECK(
      options_.padding == "valid" || options_.padding == "same" || options_.padding == "causal",
      "Conv1D: padding must be 'valid', 'same' or 'causal'. Received: padding='{}'",
      options_.padding);
  detail::kernel_data_format(options_.data_format, "Conv1D");
  OSPREY_CHECK(options_.groups >= 1 && filters % options_.groups == 0,
               "Conv1D: filters must be divisible by groups. Received: filters={}, groups={}",
               filters, options_.groups);
}

int64_t Conv1D::input_channels(const Shape& s) const {
  const bool last = options_.data_format == "channels_last";
  OSPREY_CHECK(s.ndim() == 3, "{}: expected a 3-D input {}. Received: {}", name(),
               last ? "[batch, steps, channels]" : "[batch, channels, steps]", s.to_string());
  const int64_t c = last ? s[2] : s[1];
  OSPREY_CHECK(c > 0 && c % options_.groups == 0,
               "{}: input channels must be divisible by groups={}. Received: {} channels in {}",
               name(), options_.groups, c, s.to_string());
  return c;
}

Shape Conv1D::as_2d(const Shape& s) const {
  return options_.data_format == "channels_last" ? Shape{s[0], 1, s[1], s[2]}
                                                 : Shape{s[0], s[1], 1, s[2]};
}

Shape Conv1D::kernel_2d() const {
  const Shape& k = kernel_.shape();  // [k, C / groups, filters]
  return {1, k[0], k[1], k[2]};
}

Conv2dParams Conv1D::params(const Shape& x2d) const {
  const bool causal = options_.padding == "causal";
  const Shape w{1, kernel_size_,
                x2d[options_.data_format == "channels_last" ? 3 : 1] / options_.groups, filters_};
  return resolve_conv2d(
      x2d, w,
      {.strides = {1, options_.strides},
       .padding = causal ? "explicit" : options_.padding,
       .pads = {0, 0, causal ? options_.dilation_rate * (kernel_size_ - 1) : 0, 0},
       .dilation = {1, options_.dilation_rate},
       .groups = options_.groups,
       .data_format = detail::kernel_data_format(options_.data_format, name())});
}

void Conv1D::build_single(const Shape& input_shape) {
  const int64_t c = input_channels(input_shape);
  kernel_ = add_weight("kernel", {kernel_size_, c / options_.groups, filters_},
                       options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias) {
    bias_ =
        add_weight("bias", {filters_}, options_.bias_initializer, true, options_.bias_regularizer);
  }
}

Shape Conv1D::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const int64_t c = input_channels(input_shapes[0]);
  const Shape w{1, kernel_size_, c / options_.groups, filters_};
  return detail::with_batch(input_shapes[0], [&](const Shape& s) {
    const Shape x2d = as_2d(s);
    const Shape y = conv2d_output_shape(x2d, w, params(x2d));
    return options_.data_format == "channels_last" ? Shape{y[0], y[2], y[3]}
                                                   : Shape{y[0], y[1], y[3]};
  });
}

Variable Conv1D::call_single(const Variable& x, bool training) {
  (void)input_channels(x.shape());
  const Shape x2d = as_2d(x.shape());
  Conv2dParams p = params(x2d);
  // relu, sigmoid and tanh run inside the convolution kernel, as Conv2D's.
  const Activation a = options_.activation.fused();
  const bool fuse = a == Activation::relu || a == Activation::sigmoid || a == Activation::tanh;
  if (fuse) p.activation = a;
  const Variable kernel = autograd::reshape(autocast(kernel_), kernel_2d());
  Variable y = autograd::conv2d(autograd::reshape(x, x2d), kernel, autocast(bias_), p);
  const Shape& s = y.shape();  // [N, 1, T', F] or [N, F, 1, T']
  y = autograd::reshape(y, options_.data_format == "channels_last" ? Shape{s[0], s[2], s[3]}
                                                                   : Shape{s[0], s[1], s[3]});
  return fuse ? y : options_.activation(y);
}

nlohmann::json Conv1D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["filters"] = filters_;
  c["kernel_size"] = nlohmann::json::array({kernel_size_});  // Keras writes 1-tuples
  c["strides"] = nlohmann::json::array({options_.strides});
  c["padding"] = options_.padding;
  c["data_format"] = options_.data_format;
  c["dilation_rate"] = nlohmann::json::array({options_.dilation_rate});
  c["groups"] = options_.groups;
  c["activation"] = options_.activation.name();
  write_kernel_bias_config(c, options_);
  return c;
}

std::shared_ptr<Layer> Conv1D::from_config(const nlohmann::json& c) {
  Conv1DOptions o;
  read_base_options(c, o);
  o.strides = detail::read_single(c, "strides", 1);
  o.padding = c.value("padding", std::string("valid"));
  o.data_format = c.value("data_format", std::string("channels_last"));
  o.dilation_rate = detail::read_single(c, "dilation_rate", 1);
  o.groups = c.value("groups", int64_t{1});
  o.activation = c.value("activation", std::string("linear"));
  read_kernel_bias_config(c, o);
  return std::make_shared<Conv1D>(c.at("filters").get<int64_t>(),
                                  detail::read_single(c, "kernel_size", 0), o);
}

}  // namespace osprey::nn
