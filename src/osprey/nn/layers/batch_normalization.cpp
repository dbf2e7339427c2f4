#include "osprey/nn/layers/batch_normalization.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/replica_context.h"

namespace osprey::nn {

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : SingleInputLayer("BatchNormalization", base_options(options)), options_(std::move(options)) {
  OSPREY_CHECK(options_.momentum >= 0.0 && options_.momentum <= 1.0,
               "BatchNormalization: momentum must be in [0, 1]. Received: momentum={}",
               options_.momentum);
  OSPREY_CHECK(options_.epsilon > 0.0,
               "BatchNormalization: epsilon must be positive. Received: epsilon={}",
               options_.epsilon);
}

int BatchNormalization::channel_axis(const Shape& s) const {
  const int a = options_.axis < 0 ? options_.axis + s.ndim() : options_.axis;
  OSPREY_CHECK(a >= 1 && a < s.ndim(),
               "{}: axis {} is out of range for an input of shape {} (expected a non-batch axis)",
               name(), options_.axis, s.to_string());
  return a;
}

void BatchNormalization::build_single(const Shape& input_shape) {
  const int64_t c = input_shape[channel_axis(input_shape)];
  OSPREY_CHECK(c > 0, "{}: the channel axis must have a known, positive size. Received: {}", name(),
               input_shape.to_string());
  if (options_.scale)
    gamma_ = add_weight("gamma", {c}, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center)
    beta_ = add_weight("beta", {c}, options_.beta_initializer, true, options_.beta_regularizer);
  moving_mean_ = add_weight("moving_mean", {c}, options_.moving_mean_initializer, false);
  moving_variance_ =
      add_weight("moving_variance", {c}, options_.moving_variance_initializer, false);
}

Shape BatchNormalization::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  channel_axis(input_shapes[0]);
  return input_shapes[0];
}

Variable BatchNormalization::call_single(const Variable& x, bool training) {
  const int axis = channel_axis(x.shape());
  const int64_t c = moving_mean_.numel();
  OSPREY_CHECK(x.size(axis) == c, "{}: expected {} channels on axis {}. Received: {}", name(), c,
               options_.axis, x.shape().to_string());
  // Handles to the weights' storage: batch_norm updates them in place in training.
  Tensor mean = moving_mean_.value();
  Tensor var = moving_variance_.value();
  autograd::BatchNormOptions o{.training = training && trainable(),
                               .momentum = options_.momentum,
                               .epsilon = options_.epsilon,
                               .axis = axis};
  ReplicaContext* replica =
      options_.synchronized && o.training ? current_replica_context() : nullptr;
  // The context outlives the step (the strategy owns it), so the backward node may hold it.
  if (replica != nullptr && replica->num_replicas() > 1) {
    o.cross_replica_sum = [replica](Tensor& t) { replica->all_reduce_sum(t); };
  }
  return autograd::batch_norm(x, gamma_, beta_, mean, var, o);
}

nlohmann::json BatchNormalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = options_.axis;
  c["momentum"] = options_.momentum;
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = options_.beta_initializer.to_json();
  c["gamma_initializer"] = options_.gamma_initializer.to_json();
  c["moving_mean_initializer"] = options_.moving_mean_initializer.to_json();
  c["moving_variance_initializer"] = options_.moving_variance_initializer.to_json();
  c["beta_regularizer"] = options_.beta_regularizer.to_json();
  c["gamma_regularizer"] = options_.gamma_regularizer.to_json();
  c["synchronized"] = options_.synchronized;
  return c;
}

std::shared_ptr<Layer> BatchNormalization::from_config(const nlohmann::json& c) {
  BatchNormalizationOptions o;
  read_base_options(c, o);
  o.axis = c.value("axis", -1);
  o.momentum = c.value("momentum", 0.99);
  o.epsilon = c.value("epsilon", 1e-3);
  o.center = c.value("center", true);
  o.scale = c.value("scale", true);
  auto init = [&](const char* key, Initializer& field) {
    if (c.contains(key)) field = initializers::from_json(c[key]);
  };
  init("beta_initializer", o.beta_initializer);
  init("gamma_initializer", o.gamma_initializer);
  init("moving_mean_initializer", o.moving_mean_initializer);
  init("moving_variance_initializer", o.moving_variance_initializer);
  o.beta_regularizer = Regularizer::from_json(c.value("beta_regularizer", nlohmann::json()));
  o.gamma_regularizer = Regularizer::from_json(c.value("gamma_regularizer", nlohmann::json()));
  o.synchronized = c.value("synchronized", false);
  return std::make_shared<BatchNormalization>(o);
}

}  // namespace osprey::nn
