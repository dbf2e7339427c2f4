#include "osprey/quant/quantized_dense.h"

#include "osprey/autograd/grad_mode.h"
#include "osprey/core/error.h"
#include "osprey/quant/int8_config.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::quant {

QuantizedDense::QuantizedDense(int64_t units, nn::ActivationFn activation, bool use_bias,
                               const nn::LayerOptions& options)
    : SingleInputLayer("QuantizedDense", options),
      units_(units),
      activation_(std::move(activation)),
      use_bias_(use_bias) {
  OSPREY_CHECK(units > 0, "QuantizedDense: units must be positive. Received: units={}", units);
}

std::shared_ptr<QuantizedDense> QuantizedDense::from_dense(const nn::Dense& dense) {
  OSPREY_CHECK(dense.built(),
               "quantize: layer '{}' is not built yet; call the model on data (or build it) first",
               dense.name());
  // The int8 kernel reads float32 activations: a quantized layer computes in float32 whatever
  // the global dtype policy (its inputs are cast up when they arrive in bfloat16).
  auto q = std::make_shared<QuantizedDense>(
      dense.units(), dense.activation(), dense.bias().defined(),
      nn::LayerOptions{dense.name(), "float32", dense.trainable()});
  q->build(dense.build_input_shapes());
  const QuantizedRows w = quantize_columns_int8(dense.kernel().value());
  Tensor k = q->kernel_.value(), s = q->kernel_scale_.value();
  k.copy_(w.values);
  s.copy_(w.scales);
  if (dense.bias().defined()) {
    Tensor b = q->bias_.value();
    b.copy_(dense.bias().value());
  }
  return q;
}

void QuantizedDense::build_single(const Shape& input_shape) {
  OSPREY_CHECK(input_shape.ndim() >= 1 && input_shape[input_shape.ndim() - 1] > 0,
               "{}: expected an input of shape [..., features]. Received: {}", name(),
               input_shape.to_string());
  const int64_t in = input_shape[input_shape.ndim() - 1];
  kernel_ = add_weight("kernel", zeros({in, units_}, {DType::int8}), false);
  kernel_scale_ = add_weight("kernel_scale", ones({units_}, {DType::float32}), false);
  if (use_bias_) bias_ = add_weight("bias", zeros({units_}, {DType::float32}), false);
}

Shape QuantizedDense::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  Shape s = input_shapes[0];
  s[s.ndim() - 1] = units_;
  return s;
}

Variable QuantizedDense::call_single(const Variable& x, bool training) {
  const int64_t in = kernel_.shape()[0];
  OSPREY_CHECK(x.ndim() >= 1 && x.size(-1) == in,
               "{}: expected inputs with {} features on the last axis. Received: {}", name(), in,
               x.shape().to_string());
  const QuantizedRows w{kernel_.value(), kernel_scale_.value()};
  const Tensor b = use_bias_ ? bias_.value() : Tensor();
  Variable y(linear_int8(x.value(), w, use_bias_ ? &b : nullptr, activation_.fused()));
  if (activation_.fused() != Activation::none) return y;
  autograd::NoGradGuard no_grad;
  return activation_(y);
}

nlohmann::json QuantizedDense::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["units"] = units_;
  c["activation"] = activation_.name();
  c["use_bias"] = use_bias_;
  c["quantization_mode"] = "int8";
  return c;
}

std::shared_ptr<nn::Layer> QuantizedDense::from_config(const nlohmann::json& c) {
  detail::check_int8_mode(c, "QuantizedDense");
  return std::make_shared<QuantizedDense>(
      c.at("units").get<int64_t>(), c.value("activation", std::string("linear")),
      c.value("use_bias", true),
      nn::LayerOptions{c.value("name", std::string()), "float32", c.value("trainable", true)});
}

}  // namespace osprey::quant
