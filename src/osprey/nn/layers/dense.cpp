#include "osprey/nn/layers/dense.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

Dense::Dense(int64_t units, ActivationFn activation, DenseOptions options)
    : Dense("Dense", units, std::move(activation), std::move(options)) {}

Dense::Dense(std::string class_name, int64_t units, ActivationFn activation, DenseOptions options)
    : SingleInputLayer(std::move(class_name), base_options(options)),
      units_(units),
      activation_(std::move(activation)),
      options_(std::move(options)) {
  OSPREY_CHECK(units > 0, "Dense: units must be positive. Received: units={}", units);
}

void Dense::build_single(const Shape& input_shape) {
  OSPREY_CHECK(input_shape.ndim() >= 1 && input_shape[input_shape.ndim() - 1] > 0,
               "{}: expected an input of shape [..., features]. Received: {}", name(),
               input_shape.to_string());
  const int64_t in = input_shape[input_shape.ndim() - 1];
  kernel_ = add_weight("kernel", {in, units_}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ =
        add_weight("bias", {units_}, options_.bias_initializer, true, options_.bias_regularizer);
}

Shape Dense::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  Shape s = input_shapes[0];
  s[s.ndim() - 1] = units_;
  return s;
}

Variable Dense::call_single(const Variable& x, bool training) {
  const int64_t in = kernel_.shape()[0];
  OSPREY_CHECK(x.ndim() >= 1 && x.size(-1) == in,
               "{}: expected inputs with {} features on the last axis. Received: {}", name(), in,
               x.shape().to_string());
  Variable y = autograd::linear(x, autocast(kernel_), autocast(bias_), activation_.fused());
  return activation_.fused() == Activation::none ? activation_(y) : y;
}

nlohmann::json Dense::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["units"] = units_;
  c["activation"] = activation_.name();
  write_kernel_bias_config(c, options_);
  return c;
}

std::shared_ptr<Layer> Dense::from_config(const nlohmann::json& c) {
  DenseOptions o;
  read_base_options(c, o);
  read_kernel_bias_config(c, o);
  return std::make_shared<Dense>(c.at("units").get<int64_t>(),
                                 c.value("activation", std::string("linear")), o);
}

}  // namespace osprey::nn
