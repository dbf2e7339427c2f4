#include "osprey/nn/layers/reshape.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

Reshape::Reshape(Shape target_shape, ReshapeOptions options)
    : SingleInputLayer("Reshape", base_options(options)), target_shape_(target_shape) {
  int unknown = 0;
  for (int64_t d : target_shape_) {
    OSPREY_CHECK(
        d > 0 || d == -1,
        "Reshape: target_shape sizes must be positive or -1 (inferred). Received: target_shape={}",
        target_shape_.to_string());
    unknown += d == -1 ? 1 : 0;
  }
  OSPREY_CHECK(unknown <= 1,
               "Reshape: target_shape may contain at most one -1. Received: target_shape={}",
               target_shape_.to_string());
}

Shape Reshape::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape& s = input_shapes[0];
  OSPREY_CHECK(s.ndim() >= 1, "{}: expected an input with a batch axis. Received a scalar", name());
  int64_t size = 1, known = 1;
  for (int i = 1; i < s.ndim(); ++i) size *= s[i];
  int inferred = -1;
  for (int i = 0; i < target_shape_.ndim(); ++i) {
    if (target_shape_[i] == -1) {
      inferred = i;
    } else {
      known *= target_shape_[i];
    }
  }
  const bool ok = inferred >= 0 ? size % known == 0 : size == known;
  OSPREY_CHECK(
      ok,
      "{}: the total size must be unchanged: cannot reshape an input of shape {} ({} values per "
      "sample) to target_shape {}",
      name(), s.to_string(), size, target_shape_.to_string());
  Shape out = target_shape_;
  if (inferred >= 0) out[inferred] = size / known;
  out.insert(0, s[0]);
  return out;
}

void Reshape::build_single(const Shape& input_shape) { compute_output_shape({input_shape}); }

Variable Reshape::call_single(const Variable& x, bool training) {
  return autograd::reshape(x, compute_output_shape({x.shape()}));
}

nlohmann::json Reshape::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["target_shape"] = target_shape_.to_vector();
  return c;
}

std::shared_ptr<Layer> Reshape::from_config(const nlohmann::json& c) {
  ReshapeOptions o;
  read_base_options(c, o);
  return std::make_shared<Reshape>(Shape(c.at("target_shape").get<std::vector<int64_t>>()), o);
}

}  // namespace osprey::nn
