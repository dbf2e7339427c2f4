#include "osprey/nn/layers/activation.h"

#include "osprey/nn/layers/options.h"

namespace osprey::nn {

ActivationLayer::ActivationLayer(ActivationFn activation, ActivationOptions options)
    : SingleInputLayer("Activation", base_options(options)), activation_(std::move(activation)) {}

Shape ActivationLayer::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  return input_shapes[0];
}

Variable ActivationLayer::call_single(const Variable& x, bool training) { return activation_(x); }

nlohmann::json ActivationLayer::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["activation"] = activation_.name();
  return c;
}

std::shared_ptr<Layer> ActivationLayer::from_config(const nlohmann::json& c) {
  ActivationOptions o;
  read_base_options(c, o);
  return std::make_shared<ActivationLayer>(c.at("activation").get<std::string>(), o);
}

}  // namespace osprey::nn
