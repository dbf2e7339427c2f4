#include "osprey/nn/layers/concatenate.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/masking.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

Concatenate::Concatenate(int axis, ConcatenateOptions options)
    : Layer("Concatenate", base_options(options)), axis_(axis) {}

Shape Concatenate::compute_output_shape(const std::vector<Shape>& input_shapes) {
  OSPREY_CHECK(input_shapes.size() >= 2, "{}: expected at least 2 inputs. Received: {}", name(),
               input_shapes.size());
  const Shape& first = input_shapes[0];
  const int axis = axis_ < 0 ? axis_ + first.ndim() : axis_;
  OSPREY_CHECK(axis >= 1 && axis < first.ndim(),
               "{}: axis {} is out of range for inputs of shape {} (expected a non-batch axis)",
               name(), axis_, first.to_string());
  Shape out = first;
  for (size_t i = 1; i < input_shapes.size(); ++i) {
    const Shape& s = input_shapes[i];
    bool ok = s.ndim() == first.ndim();
    for (int d = 0; ok && d < s.ndim(); ++d)
      ok = d == axis || s[d] == first[d] || s[d] < 0 || first[d] < 0;
    OSPREY_CHECK(
        ok,
        "{}: inputs must match in every axis but the concatenation axis {}. Received: {} (input 0) "
        "and {} (input {})",
        name(), axis_, first.to_string(), s.to_string(), i);
    out[axis] += s[axis];
  }
  return out;
}

void Concatenate::build_impl(const std::vector<Shape>& input_shapes) {
  compute_output_shape(input_shapes);
}

Variable Concatenate::call(const std::vector<Variable>& inputs, bool training) {
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  for (const Variable& x : inputs) shapes.push_back(x.shape());
  compute_output_shape(shapes);
  const int axis = axis_ < 0 ? axis_ + inputs[0].ndim() : axis_;
  return autograd::concat(inputs, axis);
}

nlohmann::json Concatenate::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = axis_;
  return c;
}

Tensor Concatenate::compute_mask(const std::vector<Variable>& inputs,
                                 const Tensor& /*mask*/) const {
  if (inputs.empty() || !inputs[0].defined()) return {};
  const int axis = axis_ < 0 ? axis_ + inputs[0].ndim() : axis_;
  if (axis == 0) return {};
  return axis == 1 && inputs[0].ndim() >= 3 ? concat_masks(inputs) : merge_masks(inputs);
}

std::shared_ptr<Layer> Concatenate::from_config(const nlohmann::json& c) {
  ConcatenateOptions o;
  read_base_options(c, o);
  return std::make_shared<Concatenate>(c.value("axis", -1), o);
}

}  // namespace osprey::nn
