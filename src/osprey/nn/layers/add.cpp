#include "osprey/nn/layers/add.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/masking.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

namespace {
// Sizes agree, where -1 (an unknown batch) matches anything.
bool same_shape(const Shape& a, const Shape& b) {
  if (a.ndim() != b.ndim()) return false;
  for (int i = 0; i < a.ndim(); ++i) {
    if (a[i] != b[i] && a[i] >= 0 && b[i] >= 0) return false;
  }
  return true;
}
}  // namespace

Add::Add(AddOptions options) : Layer("Add", base_options(options)) {}

Shape Add::compute_output_shape(const std::vector<Shape>& input_shapes) {
  OSPREY_CHECK(input_shapes.size() >= 2, "{}: expected at least 2 inputs. Received: {}", name(),
               input_shapes.size());
  for (size_t i = 1; i < input_shapes.size(); ++i) {
    OSPREY_CHECK(
        same_shape(input_shapes[0], input_shapes[i]),
        "{}: inputs must all have the same shape. Received: {} (input 0) and {} (input {})", name(),
        input_shapes[0].to_string(), input_shapes[i].to_string(), i);
  }
  return input_shapes[0];
}

void Add::build_impl(const std::vector<Shape>& input_shapes) { compute_output_shape(input_shapes); }

Variable Add::call(const std::vector<Variable>& inputs, bool training) {
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  for (const Variable& x : inputs) shapes.push_back(x.shape());
  compute_output_shape(shapes);
  Variable y = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) y = autograd::add(y, inputs[i]);
  return y;
}

Tensor Add::compute_mask(const std::vector<Variable>& inputs, const Tensor& /*mask*/) const {
  return merge_masks(inputs);
}

std::shared_ptr<Layer> Add::from_config(const nlohmann::json& c) {
  AddOptions o;
  read_base_options(c, o);
  return std::make_shared<Add>(o);
}

}  // namespace osprey::nn
