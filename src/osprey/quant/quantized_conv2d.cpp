#include "osprey/quant/quantized_conv2d.h"

#include "osprey/autograd/grad_mode.h"
#include "osprey/core/error.h"
#include "osprey/nn/layers/spatial.h"
#include "osprey/quant/int8_config.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/tensor/ops_quant.h"

namespace osprey::quant {

QuantizedConv2D::QuantizedConv2D(int64_t filters, std::array<int64_t, 2> kernel_size,
                                 nn::Conv2DOptions options)
    // The int8 kernel reads float32 activations: it computes in float32 whatever the global
    // dtype policy (bfloat16 inputs are cast up on arrival).
    : SingleInputLayer("QuantizedConv2D",
                       nn::LayerOptions{options.name, "float32", options.trainable}),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  // Conv2D's own checks, with its messages.
  (void)nn::Conv2D(filters, kernel_size,
                   {.strides = options_.strides,
                    .padding = options_.padding,
                    .data_format = options_.data_format,
                    .dilation_rate = options_.dilation_rate,
                    .groups = options_.groups,
                    .name = name()});
}

namespace {

// The activations that commute with a maximum (non-decreasing), so pooling can come first.
bool commutes_with_max(const nn::ActivationFn& a) {
  return a.is_linear() || a.name() == "relu" || a.name() == "sigmoid" || a.name() == "tanh";
}

}  // namespace

bool QuantizedConv2D::can_fold(const nn::Conv2D& conv, const nn::MaxPooling2D& pool) {
  return commutes_with_max(conv.options().activation) &&
         pool.options().data_format == conv.options().data_format;
}

void QuantizedConv2D::fold(std::shared_ptr<nn::MaxPooling2D> pool) {
  OSPREY_CHECK(commutes_with_max(options_.activation),
               "{}: a folded MaxPooling2D needs an activation that commutes with the maximum "
               "(linear, relu, sigmoid or tanh). Received: {}",
               name(), options_.activation.name());
  OSPREY_CHECK(pool->options().data_format == options_.data_format,
               "{}: the folded MaxPooling2D '{}' must have data_format '{}'. Received: '{}'",
               name(), pool->name(), options_.data_format, pool->options().data_format);
  pool_ = std::move(pool);
}

std::shared_ptr<QuantizedConv2D> QuantizedConv2D::from_conv2d(const nn::Conv2D& conv,
                                                              const nn::MaxPooling2D* pool) {
  OSPREY_CHECK(conv.built(),
               "quantize: layer '{}' is not built yet; call the model on data (or build it) first",
               conv.name());
  nn::Conv2DOptions o = conv.options();
  o.name = conv.name();
  o.trainable = conv.trainable();
  auto q = std::make_shared<QuantizedConv2D>(conv.filters(), conv.kernel_size(), o);
  if (pool != nullptr) {
    q->fold(std::static_pointer_cast<nn::MaxPooling2D>(
        nn::MaxPooling2D::from_config(pool->get_config())));
  }
  q->build(conv.build_input_shapes());
  const Tensor w = conv.kernel().value();
  const QuantizedRows wq = quantize_columns_int8(w.reshape({-1, conv.filters()}));
  Tensor k = q->kernel_.value(), s = q->kernel_scale_.value();
  k.copy_(wq.values.view(w.shape()));
  s.copy_(wq.scales);
  if (conv.bias().defined()) {
    Tensor b = q->bias_.value();
    b.copy_(conv.bias().value());
  }
  return q;
}

Conv2dOptions QuantizedConv2D::conv_options() const {
  return {.strides = options_.strides,
          .padding = options_.padding,
          .dilation = options_.dilation_rate,
          .groups = options_.groups,
          .data_format = nn::detail::kernel_data_format(options_.data_format, name())};
}

int64_t QuantizedConv2D::input_channels(const Shape& s) const {
  return nn::detail::conv_input_channels(s, options_.data_format, options_.groups, name());
}

void QuantizedConv2D::build_single(const Shape& input_shape) {
  const int64_t c = input_channels(input_shape);
  kernel_ = add_weight(
      "kernel",
      zeros({kernel_size_[0], kernel_size_[1], c / options_.groups, filters_}, {DType::int8}),
      false);
  kernel_scale_ = add_weight("kernel_scale", ones({filters_}, {DType::float32}), false);
  if (options_.use_bias) bias_ = add_weight("bias", zeros({filters_}, {DType::float32}), false);
}

Shape QuantizedConv2D::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const int64_t c = input_channels(input_shapes[0]);
  const Shape w{kernel_size_[0], kernel_size_[1], c / options_.groups, filters_};
  const Shape conv = nn::detail::with_batch(input_shapes[0], [&](const Shape& s) {
    return conv2d_output_shape(s, w, resolve_conv2d(s, w, conv_options()));
  });
  return pool_ != nullptr ? pool_->compute_output_shape({conv}) : conv;
}

Variable QuantizedConv2D::call_single(const Variable& x, bool training) {
  const int64_t c = input_channels(x.shape());
  const Shape& ks = kernel_.shape();
  OSPREY_CHECK(c == ks[2] * options_.groups, "{}: expected inputs with {} channels. Received: {}",
               name(), ks[2] * options_.groups, x.shape().to_string());
  const QuantizedRows w{kernel_.value(), kernel_scale_.value()};
  const Tensor b = options_.use_bias ? bias_.value() : Tensor();
  const nn::ActivationFn& act = options_.activation;
  const Pool2dOptions pool = pool_ != nullptr ? pool_->pool_options() : Pool2dOptions{};
  Variable y(conv2d_int8(x.value(), w, options_.use_bias ? &b : nullptr, conv_options(),
                         act.fused(), pool_ != nullptr ? &pool : nullptr));
  if (act.fused() != Activation::none) return y;
  autograd::NoGradGuard no_grad;
  return act(y);
}

nlohmann::json QuantizedConv2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["filters"] = filters_;
  c["kernel_size"] = nn::detail::pair_json(kernel_size_);
  c["strides"] = nn::detail::pair_json(options_.strides);
  c["padding"] = options_.padding;
  c["data_format"] = options_.data_format;
  c["dilation_rate"] = nn::detail::pair_json(options_.dilation_rate);
  c["groups"] = options_.groups;
  c["activation"] = options_.activation.name();
  c["use_bias"] = options_.use_bias;
  c["quantization_mode"] = "int8";
  if (pool_ != nullptr) c["fused_max_pooling"] = pool_->get_config();
  return c;
}

std::shared_ptr<nn::Layer> QuantizedConv2D::from_config(const nlohmann::json& c) {
  detail::check_int8_mode(c, "QuantizedConv2D");
  // Conv2D reads the shared fields; the initializers it defaults are never used here.
  const auto conv = std::static_pointer_cast<nn::Conv2D>(nn::Conv2D::from_config(c));
  nn::Conv2DOptions o = conv->options();
  o.name = c.value("name", std::string());
  o.trainable = c.value("trainable", true);
  auto q = std::make_shared<QuantizedConv2D>(conv->filters(), conv->kernel_size(), o);
  if (c.contains("fused_max_pooling")) {
    q->fold(std::static_pointer_cast<nn::MaxPooling2D>(
        nn::MaxPooling2D::from_config(c.at("fused_max_pooling"))));
  }
  return q;
}

}  // namespace osprey::quant
