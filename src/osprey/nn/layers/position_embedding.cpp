#include "osprey/nn/layers/position_embedding.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

PositionEmbedding::PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions options)
    : SingleInputLayer("PositionEmbedding", base_options(options)),
      sequence_length_(sequence_length),
      options_(std::move(options)) {
  OSPREY_CHECK(sequence_length > 0,
               "PositionEmbedding: sequence_length must be positive. Received: sequence_length={}",
               sequence_length);
}

void PositionEmbedding::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() >= 2 && s[s.ndim() - 1] > 0,
               "{}: expected [batch, steps, features]. Received: {}", name(), s.to_string());
  OSPREY_CHECK(s[s.ndim() - 2] <= sequence_length_,
               "{}: the input has {} steps; the layer holds {} positions (sequence_length). "
               "Received: {}",
               name(), s[s.ndim() - 2], sequence_length_, s.to_string());
}

void PositionEmbedding::build_single(const Shape& input_shape) {
  check_input_shape(input_shape);
  embeddings_ = add_weight("embeddings", {sequence_length_, input_shape[input_shape.ndim() - 1]},
                           options_.initializer);
}

Shape PositionEmbedding::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  check_input_shape(input_shapes[0]);
  return input_shapes[0];
}

Variable PositionEmbedding::positions(int64_t length, int64_t start) {
  OSPREY_CHECK(built(), "{}: positions() needs the layer built (call it on a sequence first)",
               name());
  OSPREY_CHECK(start >= 0 && length >= 0 && start + length <= sequence_length_,
               "{}: positions [{}, {}) run past the {} the layer holds (sequence_length)", name(),
               start, start + length, sequence_length_);
  return autograd::narrow(autocast(embeddings_), 0, start, length);
}

Variable PositionEmbedding::call_single(const Variable& x, bool /*training*/) {
  check_input_shape(x.shape());
  const Shape& s = x.shape();
  OSPREY_CHECK(s[s.ndim() - 1] == embeddings_.shape()[1],
               "{}: the input has {} features; the layer was built for {}. Received: {}", name(),
               s[s.ndim() - 1], embeddings_.shape()[1], s.to_string());
  return autograd::expand(positions(s[s.ndim() - 2]), s);
}

nlohmann::json PositionEmbedding::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["sequence_length"] = sequence_length_;
  c["initializer"] = options_.initializer.to_json();
  return c;
}

std::shared_ptr<Layer> PositionEmbedding::from_config(const nlohmann::json& c) {
  PositionEmbeddingOptions o;
  read_base_options(c, o);
  if (c.contains("initializer")) o.initializer = initializers::from_json(c["initializer"]);
  return std::make_shared<PositionEmbedding>(c.at("sequence_length").get<int64_t>(), o);
}

}  // namespace osprey::nn
