#include "osprey/nn/layers/time_distributed.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

namespace {
// [batch, T, rest...] -> [batch, rest...], the shape one step has (batch may be -1).
Shape step_shape(const Shape& s) {
  Shape out = s;
  out.erase(1);
  return out;
}
}  // namespace

TimeDistributed::TimeDistributed(std::shared_ptr<Layer> layer, TimeDistributedOptions options)
    : SingleInputLayer("TimeDistributed", base_options(options)), layer_(std::move(layer)) {
  OSPREY_CHECK(layer_ != nullptr, "{}: layer must not be null", name());
  layer_->set_path_prefix(path());
}

void TimeDistributed::set_path_prefix(const std::string& prefix) {
  Layer::set_path_prefix(prefix);
  layer_->set_path_prefix(path());
}

void TimeDistributed::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() >= 3,
               "{}: expected an input of rank 3 or more [batch, timesteps, ...]. Received: {}",
               name(), s.to_string());
}

void TimeDistributed::build_single(const Shape& input_shape) {
  check_input_shape(input_shape);
  layer_->build({step_shape(input_shape)});
}

Shape TimeDistributed::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape& s = input_shapes[0];
  check_input_shape(s);
  Shape out = layer_->compute_output_shape({step_shape(s)});
  OSPREY_CHECK(out.ndim() >= 1, "{}: the layer {} returns a scalar", name(), layer_->name());
  out.insert(1, s[1]);
  return out;
}

Variable TimeDistributed::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  const Shape& s = x.shape();
  Shape folded = step_shape(s);
  folded[0] = s[0] * s[1];
  const Variable y = (*layer_)(autograd::reshape(x, folded), training);
  Shape unfolded = y.shape();
  OSPREY_CHECK(unfolded.ndim() >= 1 && unfolded[0] == folded[0],
               "{}: the layer {} must keep the batch axis. Received: {} -> {}", name(),
               layer_->name(), folded.to_string(), unfolded.to_string());
  unfolded[0] = s[1];
  unfolded.insert(0, s[0]);
  return autograd::reshape(y, unfolded);
}

nlohmann::json TimeDistributed::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["layer"] = serialize_layer(*layer_);
  return c;
}

std::shared_ptr<Layer> TimeDistributed::from_config(const nlohmann::json& c) {
  TimeDistributedOptions o;
  read_base_options(c, o);
  return std::make_shared<TimeDistributed>(deserialize_layer(c.at("layer"), "layer"), o);
}

}  // namespace osprey::nn
