#include "osprey/nn/layers/dropout.h"

#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

Dropout::Dropout(double rate, DropoutOptions options)
    : SingleInputLayer("Dropout", base_options(options)),
      rate_(rate),
      options_(std::move(options)) {
  OSPREY_CHECK(rate >= 0.0 && rate < 1.0, "Dropout: rate must be in [0, 1). Received: rate={}",
               rate);
}

Shape Dropout::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  return input_shapes[0];
}

Variable Dropout::call_single(const Variable& x, bool training) {
  if (!training || rate_ == 0.0) return x;
  const uint64_t seed = options_.seed ? *options_.seed + calls_++ : next_seed();
  return autograd::dropout(x, rate_, seed, true);
}

nlohmann::json Dropout::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["rate"] = rate_;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json();
  c["noise_shape"] = nullptr;
  return c;
}

std::shared_ptr<Layer> Dropout::from_config(const nlohmann::json& c) {
  DropoutOptions o;
  read_base_options(c, o);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  OSPREY_CHECK_T(NotImplementedError, !c.contains("noise_shape") || c["noise_shape"].is_null(),
                 "Dropout: noise_shape is not supported. Received: {}", c["noise_shape"].dump());
  return std::make_shared<Dropout>(c.at("rate").get<double>(), o);
}

}  // namespace osprey::nn
