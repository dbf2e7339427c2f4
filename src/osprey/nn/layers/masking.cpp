#include "osprey/nn/layers/masking.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

Masking::Masking(double mask_value, MaskingOptions options)
    : SingleInputLayer("Masking", base_options(options)), mask_value_(mask_value) {}

Shape Masking::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  return input_shapes[0];
}

Variable Masking::call_single(const Variable& x, bool /*training*/) {
  OSPREY_CHECK(x.ndim() >= 2,
               "{}: expected a sequence [batch, steps, features] (at least 2-D). Received: input "
               "shape {}",
               name(), x.shape().to_string());
  const Tensor& v = x.value();
  // A step is real when any of its features differs from mask_value.
  const Tensor differs = ne(v, full(Shape{}, mask_value_, {v.dtype(), v.device()}));
  const Tensor real = max(differs.to(DType::float32), {-1}, /*keepdims=*/true);  // [..., 1]
  Variable out = autograd::mul(x, Variable(real.to(v.dtype())));
  out.set_mask(gt(real, full(Shape{}, 0.0, {DType::float32, v.device()})).squeeze(-1));
  return out;
}

Tensor merge_masks(const std::vector<Variable>& inputs) {
  Tensor real;  // float32 product of the masks: 1 where every one is real
  for (const Variable& x : inputs) {
    if (!x.defined() || !x.mask().defined()) continue;
    const Tensor m = x.mask().to(DType::float32);
    real = real.defined() ? mul(real, m) : m;
  }
  if (!real.defined()) return {};
  return gt(real, full(Shape{}, 0.0, {DType::float32, real.device()}));
}

Tensor concat_masks(const std::vector<Variable>& inputs) {
  bool any = false;
  for (const Variable& x : inputs) any = any || (x.defined() && x.mask().defined());
  if (!any) return {};
  std::vector<Tensor> parts;
  parts.reserve(inputs.size());
  for (const Variable& x : inputs) {
    parts.push_back(x.mask().defined()
                        ? x.mask()
                        : full(Shape{x.shape()[0], x.shape()[1]}, 1.0, {DType::boolean}));
  }
  return concat(parts, 1);
}

nlohmann::json Masking::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["mask_value"] = mask_value_;
  return c;
}

std::shared_ptr<Layer> Masking::from_config(const nlohmann::json& c) {
  MaskingOptions o;
  read_base_options(c, o);
  return std::make_shared<Masking>(c.value("mask_value", 0.0), o);
}

}  // namespace osprey::nn
