#include "osprey/nn/layers/rms_normalization.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

RMSNormalization::RMSNormalization(RMSNormalizationOptions options)
    : SingleInputLayer("RMSNormalization", base_options(options)), options_(std::move(options)) {
  OSPREY_CHECK(options_.axis == -1,
               "RMSNormalization: only the last axis is normalized (axis=-1). Received: axis={}",
               options_.axis);
  OSPREY_CHECK(options_.epsilon > 0,
               "RMSNormalization: epsilon must be positive. Received: epsilon={}",
               options_.epsilon);
}

void RMSNormalization::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() >= 1 && s[s.ndim() - 1] > 0,
               "{}: expected an input with a last axis to normalize. Received: {}", name(),
               s.to_string());
}

void RMSNormalization::build_single(const Shape& input_shape) {
  check_input_shape(input_shape);
  scale_ = add_weight("scale", {input_shape[input_shape.ndim() - 1]}, "ones");
}

Shape RMSNormalization::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  check_input_shape(input_shapes[0]);
  return input_shapes[0];
}

Variable RMSNormalization::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  OSPREY_CHECK(x.shape()[x.ndim() - 1] == scale_.shape()[0],
               "{}: the last axis has {} values; the layer was built for {}. Received: {}", name(),
               x.shape()[x.ndim() - 1], scale_.shape()[0], x.shape().to_string());
  return autograd::rms_norm(x, autocast(scale_), options_.epsilon);
}

nlohmann::json RMSNormalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = options_.axis;
  c["epsilon"] = options_.epsilon;
  return c;
}

std::shared_ptr<Layer> RMSNormalization::from_config(const nlohmann::json& c) {
  RMSNormalizationOptions o;
  read_base_options(c, o);
  o.axis = c.value("axis", -1);
  o.epsilon = c.value("epsilon", 1e-6);
  return std::make_shared<RMSNormalization>(o);
}

}  // namespace osprey::nn
