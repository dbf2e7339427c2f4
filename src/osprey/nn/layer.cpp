#include "osprey/nn/layer.h"

#include "osprey/autograd/creation_scope.h"
#include "osprey/autograd/grad_mode.h"
#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/core/trace.h"
#include "osprey/nn/build_limits.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn {

namespace {
// The policy a layer's `dtype` option names; the error names the layer.
precision::DTypePolicy policy_from_option(const std::string& dtype, const std::string& layer) {
  try {
    return precision::DTypePolicy(dtype);
  } catch (const ValueError&) {
    OSPREY_THROW(ValueError, "{}: unknown dtype policy '{}'. Valid policies: {}", layer, dtype,
                 precision::valid_policy_names());
  }
}

// The shapes a first call builds a layer for; an undefined input is an error naming the layer.
std::vector<Shape> input_shapes_of(const std::vector<Variable>& xs, const std::string& layer) {
  std::vector<Shape> shapes;
  shapes.reserve(xs.size());
  for (const Variable& x : xs) {
    OSPREY_CHECK(x.defined(), "{}: received an undefined input", layer);
    shapes.push_back(x.shape());
  }
  return shapes;
}
}  // namespace

std::string to_snake_case(const std::string& class_name) {
  std::string out;
  for (size_t i = 0; i < class_name.size(); ++i) {
    const char c = class_name[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(class_name[i - 1]));
      const bool next_lower =
          i + 1 < class_name.size() && std::islower(static_cast<unsigned char>(class_name[i + 1]));
      const bool prev_upper = i > 0 && std::isupper(static_cast<unsigned char>(class_name[i - 1]));
      if (i > 0 && (prev_lower || (prev_upper && next_lower)) &&
          !std::isdigit(static_cast<unsigned char>(class_name[i - 1])))
        out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

SymbolicTensor Input(const Shape& shape, const std::string& name, DType dtype) {
  for (int i = 0; i < shape.ndim(); ++i) {
    // -1 is Keras's None: a sequence of any length (Input((None, features))).
    OSPREY_CHECK(shape[i] > 0 || shape[i] == -1,
                 "Input: sizes must be positive, or -1 for any size (the batch dimension is "
                 "implicit). Received: {}",
                 shape.to_string());
  }
  Shape s = shape;
  s.insert(0, -1);
  auto node = std::make_shared<SymbolicTensor::Node>();
  node->input_name = name.empty() ? unique_name("input_layer") : name;
  return SymbolicTensor(s, dtype, std::move(node));
}

Layer::Layer(std::string class_name, const LayerOptions& options)
    : class_name_(std::move(class_name)),
      name_(options.name.empty() ? unique_name(to_snake_case(class_name_)) : options.name),
      trainable_(options.trainable),
      policy_(options.dtype.empty() ? config::dtype_policy()
                                    : policy_from_option(options.dtype, name_)) {}

void Layer::set_path_prefix(const std::string& prefix) {
  prefix_ = prefix;
  for (Weight& w : weights_) w.variable.set_name(path() + "/" + w.name);
}

void Layer::check_num_inputs(size_t received, size_t expected) const {
  OSPREY_CHECK(received == expected, "{}: expected {} input(s), received {}", name_, expected,
               received);
}

void Layer::build(const std::vector<Shape>& input_shapes) {
  if (built_) return;
  build_impl(input_shapes);
  build_shapes_ = input_shapes;
  built_ = true;
}

Variable Layer::operator()(const Variable& x, bool training) {
  return (*this)(std::vector<Variable>{x}, training);
}

Variable Layer::operator()(const std::vector<Variable>& xs, bool training) {
  // One span per call, named by the weights' path prefix (sequential/dense_1), for the profiler.
  const trace::Span span(
      trace::Category::layer, [this] { return path(); },
      [&](trace::Args& a) {
        std::string shapes;
        for (const Variable& x : xs) {
          if (!shapes.empty()) shapes += ' ';
          shapes += x.defined() ? x.shape().to_string() : std::string("None");
        }
        a.emplace_back("class", class_name());
        a.emplace_back("input_shapes", std::move(shapes));
      },
      0);
  if (!built_) build(input_shapes_of(xs, name_));
  check_input_masks(xs);
  // Only mixed/16-bit layers pay for the copy of the inputs.
  if (needs_input_cast(xs)) return with_output_mask(xs, call(cast_inputs(xs), training));
  return with_output_mask(xs, call(xs, training));
}

bool Layer::needs_input_cast(const std::vector<Variable>& xs) const {
  if (!autocasts_inputs()) return false;
  for (const Variable& x : xs) {
    if (x.defined() && policy_.casts_input(x.dtype())) return true;
  }
  return false;
}

std::vector<Variable> Layer::cast_inputs(const std::vector<Variable>& xs) const {
  std::vector<Variable> cast_xs = xs;
  for (Variable& x : cast_xs) {
    if (!x.defined() || !policy_.casts_input(x.dtype())) continue;
    const Tensor mask = x.mask();
    x = autograd::cast(x, compute_dtype());
    x.set_mask(mask);
  }
  return cast_xs;
}

std::vector<Variable> Layer::call_multi(const std::vector<Variable>& xs,
                                        const CallArgs<Variable>& args, bool training) {
  if (args.empty() && num_outputs() == 1) return {(*this)(xs, training)};
  if (!built_) build(input_shapes_of(xs, name_));
  for (const Variable& s : args.initial_state)
    OSPREY_CHECK(s.defined(), "{}: received an undefined initial_state", name_);
  check_input_masks(xs);
  std::vector<Variable> outs =
      call_with_args(needs_input_cast(xs) ? cast_inputs(xs) : xs, args, training);
  OSPREY_ASSERT(outs.size() == num_outputs(), "{}: call_with_args gave {} outputs, expected {}",
                name_, outs.size(), num_outputs());
  outs[0] = with_output_mask(xs, outs[0]);
  // A state is one value per sequence: no mask rides on it, even when it shares the sequence
  // output's handle (the last step's output is the state without return_sequences).
  for (size_t i = 1; i < outs.size(); ++i) {
    if (outs[i].mask().defined() || outs[i].is_same(outs[0])) {
      outs[i] = autograd::reshape(outs[i], outs[i].shape());
      outs[i].set_mask({});
    }
  }
  return outs;
}

void Layer::check_no_call_args(size_t initial_states) const {
  OSPREY_CHECK(initial_states == 0,
               "{}: a {} call takes no initial_state (only recurrent layers do). Received: {} "
               "tensor(s)",
               name_, class_name_, initial_states);
}

std::vector<Variable> Layer::call_with_args(const std::vector<Variable>& inputs,
                                            const CallArgs<Variable>& args, bool training) {
  check_no_call_args(args.initial_state.size());
  return {call(inputs, training)};
}

std::vector<Shape> Layer::compute_output_shapes(const std::vector<Shape>& input_shapes,
                                                const CallArgs<Shape>& args) {
  check_no_call_args(args.initial_state.size());
  return {compute_output_shape(input_shapes)};
}

Tensor Layer::compute_mask(const std::vector<Variable>& /*inputs*/, const Tensor& mask) const {
  return mask;
}

void Layer::check_input_masks(const std::vector<Variable>& xs) const {
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined() || !xs[i].mask().defined()) continue;
    const Tensor& m = xs[i].mask();
    const Shape& s = xs[i].shape();
    bool ok = m.dtype() == DType::boolean && m.ndim() >= 1 && m.ndim() <= s.ndim();
    for (int a = 0; ok && a < m.ndim(); ++a) ok = m.size(a) == s[a];
    OSPREY_CHECK(ok,
                 "{}: the mask of input {} must be bool with that input's leading axes (input "
                 "shape {}; a sequence [batch, steps, ...] takes a mask [batch, steps]). "
                 "Received: mask {}{}",
                 name_, i, s.to_string(), dtype_name(m.dtype()), m.shape().to_string());
  }
}

Variable Layer::with_output_mask(const std::vector<Variable>& xs, Variable out) {
  const Tensor none;
  const Tensor& in_mask = xs.empty() || !xs[0].defined() ? none : xs[0].mask();
  // An output that is one of the inputs (an identity in inference) gets a handle of its own, so
  // that setting its mask leaves the caller's input as it was.
  const auto own = [&](Variable v) {
    for (const Variable& x : xs) {
      if (x.defined() && x.is_same(v)) return autograd::reshape(v, v.shape());
    }
    return v;
  };
  if (!supports_masking()) {
    if (in_mask.defined() && !warned_mask_dropped_) {
      warned_mask_dropped_ = true;
      fmt::print(stderr,
                 "osprey: warning: layer '{}' ({}) was passed an input with a mask, but it does "
                 "not support masking: the mask is dropped and later layers will not see it\n",
                 name_, class_name_);
    }
    if (out.mask().defined()) {
      out = own(out);
      out.set_mask({});
    }
    return out;
  }
  if (out.mask().defined()) return out;  // call() set it, or passed an input through
  Tensor mask = compute_mask(xs, in_mask);
  if (mask.defined()) {
    out = own(out);
    out.set_mask(std::move(mask));
  }
  return out;
}

Variable Layer::autocast(const Variable& weight) {
  if (!weight.defined() || !is_floating(weight.dtype()) || weight.dtype() == compute_dtype())
    return weight;
  if (!autograd::should_record(weight)) return autograd::cast(weight, compute_dtype());
  for (CastEntry& e : cast_cache_) {
    if (!e.master.is_same(weight)) continue;
    const auto& node = e.cast.defined() ? e.cast.grad_fn() : nullptr;
    if (node == nullptr || node->released() || e.version != weight.version()) {
      e.cast = autograd::cast(weight, compute_dtype());
      e.version = weight.version();
    }
    return e.cast;
  }
  cast_cache_.push_back({weight, autograd::cast(weight, compute_dtype()), weight.version()});
  return cast_cache_.back().cast;
}

Shape Layer::compute_output_shape(const std::vector<Shape>& input_shapes) {
  std::vector<Variable> dummies;
  for (Shape s : input_shapes) {
    if (s.ndim() > 0 && s[0] < 0) s[0] = 1;
    check_shape_inference(name_, s);
    dummies.emplace_back(zeros(s, {compute_dtype()}));
  }
  autograd::NoGradGuard no_grad;
  Shape out = (*this)(dummies, false).shape();
  if (!input_shapes.empty() && input_shapes[0].ndim() > 0 && input_shapes[0][0] < 0 &&
      out.ndim() > 0)
    out[0] = -1;
  return out;
}

SymbolicTensor Layer::operator()(const SymbolicTensor& x) {
  return (*this)(std::vector<SymbolicTensor>{x});
}

SymbolicTensor Layer::operator()(const std::vector<SymbolicTensor>& xs) {
  std::vector<SymbolicTensor> out = call_multi(xs);
  OSPREY_CHECK(out.size() == 1,
               "{}: the call gives {} outputs (return_state: the output, then the states); use "
               "call_multi()",
               name_, out.size());
  return out[0];
}

std::vector<SymbolicTensor> Layer::call_multi(const std::vector<SymbolicTensor>& xs,
                                              const CallArgs<SymbolicTensor>& args) {
  std::vector<Shape> shapes;
  for (const SymbolicTensor& x : xs) {
    OSPREY_CHECK(x.defined(), "{}: received an undefined symbolic input", name_);
    shapes.push_back(x.shape());
  }
  CallArgs<Shape> shape_args;
  for (const SymbolicTensor& s : args.initial_state) {
    OSPREY_CHECK(s.defined(), "{}: received an undefined symbolic initial_state", name_);
    shape_args.initial_state.push_back(s.shape());
  }
  build(shapes);
  const std::vector<Shape> outs = compute_output_shapes(shapes, shape_args);
  auto node = std::make_shared<SymbolicTensor::Node>();
  node->layer = shared_from_this();
  node->inputs = xs;
  node->initial_state = args.initial_state;
  node->num_outputs = outs.size();
  const std::shared_ptr<const SymbolicTensor::Node> shared = std::move(node);
  std::vector<SymbolicTensor> result;
  result.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) result.emplace_back(outs[i], compute_dtype(), shared, i);
  return result;
}

Variable Layer::add_weight(const std::string& name, const Shape& shape,
                           const Initializer& initializer, bool trainable,
                           Regularizer regularizer) {
  for (const Weight& w : weights_) {
    OSPREY_CHECK(w.name != name, "{}: a weight named '{}' already exists", name_, name);
  }
  check_new_weight(path() + "/" + name, shape, variable_dtype());
  Tensor value = initializer(shape, variable_dtype(), next_seed());
  Variable v(value, trainable, path() + "/" + name);
  v.set_creation_scope(autograd::creation_scope());
  weights_.push_back({v, name, trainable, regularizer});
  return v;
}

Variable Layer::add_weight(const std::string& name, Tensor value, bool trainable) {
  for (const Weight& w : weights_) {
    OSPREY_CHECK(w.name != name, "{}: a weight named '{}' already exists", name_, name);
  }
  check_new_weight(path() + "/" + name, value.shape(), value.dtype());
  const bool requires_grad = trainable && is_floating(value.dtype());
  Variable v(std::move(value), requires_grad, path() + "/" + name);
  v.set_creation_scope(autograd::creation_scope());
  weights_.push_back({v, name, trainable, {}});
  return v;
}

void Layer::replace_sublayer(const std::string& name, std::shared_ptr<Layer> layer) {
  OSPREY_THROW(NotImplementedError, "{}: a {} cannot replace its sublayers (asked to replace '{}')",
               name_, class_name_, name);
}

bool Layer::remove_sublayer(const std::string& /*name*/) { return false; }

std::vector<Variable> Layer::variables() const {
  std::vector<Variable> out;
  for (const Weight& w : weights_) out.push_back(w.variable);
  for (const auto& l : sublayers()) {
    for (const Variable& v : l->variables()) out.push_back(v);
  }
  return out;
}

std::vector<Variable> Layer::trainable_variables() const {
  std::vector<Variable> out;
  if (!trainable_) return out;
  for (const Weight& w : weights_) {
    if (w.trainable) out.push_back(w.variable);
  }
  for (const auto& l : sublayers()) {
    for (const Variable& v : l->trainable_variables()) out.push_back(v);
  }
  return out;
}

std::vector<Variable> Layer::non_trainable_variables() const {
  std::vector<Variable> all = variables();
  std::vector<Variable> trainable = trainable_variables();
  std::vector<Variable> out;
  for (const Variable& v : all) {
    bool found = false;
    for (const Variable& t : trainable) found = found || t.is_same(v);
    if (!found) out.push_back(v);
  }
  return out;
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const Variable& v : variables()) n += v.numel();
  return n;
}

std::vector<Variable> Layer::regularization_losses() const {
  std::vector<Variable> out;
  if (!trainable_) return out;
  for (const Weight& w : weights_) {
    if (w.trainable && w.regularizer) out.push_back(w.regularizer(w.variable));
  }
  for (const auto& l : sublayers()) {
    for (const Variable& v : l->regularization_losses()) out.push_back(v);
  }
  return out;
}

void Layer::set_trainable(bool trainable) {
  trainable_ = trainable;
  for (Weight& w : weights_) {
    if (w.variable.is_leaf()) w.variable.set_requires_grad(trainable && w.trainable);
  }
  for (const auto& l : sublayers()) l->set_trainable(trainable);
}

nlohmann::json Layer::get_config() const {
  return {{"name", name_}, {"trainable", trainable_}, {"dtype", policy_.name()}};
}

void SingleInputLayer::build_impl(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  build_single(input_shapes[0]);
}

Variable SingleInputLayer::call(const std::vector<Variable>& inputs, bool training) {
  check_num_inputs(inputs.size(), 1);
  return call_single(inputs[0], training);
}

}  // namespace osprey::nn
