#include "osprey/nn/layers/layer_normalization.h"

#include <algorithm>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

namespace {
std::string axes_string(const std::vector<int>& axes) {
  std::string s;
  for (int a : axes) s += (s.empty() ? "" : ", ") + std::to_string(a);
  return "[" + s + "]";
}
}  // namespace

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : SingleInputLayer("LayerNormalization", base_options(options)), options_(std::move(options)) {
  OSPREY_CHECK(!options_.axis.empty(), "LayerNormalization: axis must name at least one axis");
  OSPREY_CHECK(options_.epsilon > 0.0,
               "LayerNormalization: epsilon must be positive. Received: epsilon={}",
               options_.epsilon);
}

int LayerNormalization::begin_axis(const Shape& s) const {
  std::vector<int> axes;
  for (int a : options_.axis) {
    const int n = a < 0 ? a + s.ndim() : a;
    OSPREY_CHECK(n >= 1 && n < s.ndim(), "{}: axis {} is out of range for an input of shape {}",
                 name(), axes_string(options_.axis), s.to_string());
    axes.push_back(n);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  // The kernel normalizes a trailing block of axes [begin, ndim).
  OSPREY_CHECK(axes.back() == s.ndim() - 1 &&
                   axes.back() - axes.front() + 1 == static_cast<int>(axes.size()),
               "{}: axis must be a set of trailing axes (such as [-1] or [-2, -1]). Received: "
               "axis={} for an "
               "input of shape {}",
               name(), axes_string(options_.axis), s.to_string());
  return axes.front();
}

void LayerNormalization::build_single(const Shape& input_shape) {
  const int begin = begin_axis(input_shape);
  Shape param;
  for (int i = begin; i < input_shape.ndim(); ++i) param.push_back(input_shape[i]);
  if (options_.scale)
    gamma_ =
        add_weight("gamma", param, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center)
    beta_ = add_weight("beta", param, options_.beta_initializer, true, options_.beta_regularizer);
}

Shape LayerNormalization::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  begin_axis(input_shapes[0]);
  return input_shapes[0];
}

Variable LayerNormalization::call_single(const Variable& x, bool training) {
  const int begin = begin_axis(x.shape());
  const Shape& built = build_input_shapes()[0];
  for (int i = begin; i < x.ndim(); ++i) {
    OSPREY_CHECK(x.size(i) == built[i],
                 "{}: the normalized axes must keep the shape the layer was built with ({}). "
                 "Received: {}",
                 name(), built.to_string(), x.shape().to_string());
  }
  return autograd::layer_norm(x, gamma_, beta_, {.begin_axis = begin, .epsilon = options_.epsilon});
}

nlohmann::json LayerNormalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] =
      options_.axis.size() == 1 ? nlohmann::json(options_.axis[0]) : nlohmann::json(options_.axis);
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = options_.beta_initializer.to_json();
  c["gamma_initializer"] = options_.gamma_initializer.to_json();
  c["beta_regularizer"] = options_.beta_regularizer.to_json();
  c["gamma_regularizer"] = options_.gamma_regularizer.to_json();
  return c;
}

std::shared_ptr<Layer> LayerNormalization::from_config(const nlohmann::json& c) {
  LayerNormalizationOptions o;
  read_base_options(c, o);
  if (c.contains("axis")) {
    o.axis = c["axis"].is_array() ? c["axis"].get<std::vector<int>>()
                                  : std::vector<int>{c["axis"].get<int>()};
  }
  o.epsilon = c.value("epsilon", 1e-3);
  o.center = c.value("center", true);
  o.scale = c.value("scale", true);
  if (c.contains("beta_initializer"))
    o.beta_initializer = initializers::from_json(c["beta_initializer"]);
  if (c.contains("gamma_initializer"))
    o.gamma_initializer = initializers::from_json(c["gamma_initializer"]);
  o.beta_regularizer = Regularizer::from_json(c.value("beta_regularizer", nlohmann::json()));
  o.gamma_regularizer = Regularizer::from_json(c.value("gamma_regularizer", nlohmann::json()));
  return std::make_shared<LayerNormalization>(o);
}

}  // namespace osprey::nn
