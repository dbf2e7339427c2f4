#include "osprey/nn/layers/bidirectional.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

namespace {

std::string without_prefix(const std::string& s, const std::string& prefix) {
  return s.starts_with(prefix) ? s.substr(prefix.size()) : s;
}

// A fresh copy of an RNN layer rebuilt from its config (so it carries no weights or state), as
// Keras's Bidirectional makes its forward and backward layers.
std::shared_ptr<Recurrent> copy_of(const Layer& layer, const std::string& name,
                                   std::optional<bool> go_backwards) {
  nlohmann::json entry = serialize_layer(layer);
  entry["config"]["name"] = name;
  if (go_backwards) entry["config"]["go_backwards"] = *go_backwards;
  return std::dynamic_pointer_cast<Recurrent>(deserialize_layer(entry, "Bidirectional"));
}

std::string describe(const Layer& layer) {
  return fmt::format("{} '{}'", layer.class_name(), layer.name());
}

}  // namespace

Bidirectional::Bidirectional(std::shared_ptr<Layer> layer, BidirectionalOptions options)
    : SingleInputLayer("Bidirectional", base_options(options)), options_(std::move(options)) {
  OSPREY_CHECK(layer != nullptr, "{}: layer must be a recurrent layer. Received: null", name());
  const auto* rnn = dynamic_cast<const Recurrent*>(layer.get());
  OSPREY_CHECK(rnn != nullptr,
               "{}: layer must be a recurrent layer (LSTM, GRU or SimpleRNN). Received: {}", name(),
               describe(*layer));
  const std::optional<std::string>& mode = options_.merge_mode;
  OSPREY_CHECK(!mode || *mode == "concat" || *mode == "sum" || *mode == "mul" || *mode == "ave",
               "{}: merge_mode must be one of 'concat', 'sum', 'mul', 'ave' or none. Received: "
               "merge_mode='{}'",
               name(), mode.value_or(""));
  forward_ = copy_of(*layer, "forward_" + without_prefix(layer->name(), "forward_"), std::nullopt);
  if (options_.backward_layer == nullptr) {
    backward_ = copy_of(*layer, "backward_" + without_prefix(layer->name(), "backward_"),
                        !rnn->options().go_backwards);
  } else {
    backward_ = std::dynamic_pointer_cast<Recurrent>(options_.backward_layer);
    OSPREY_CHECK(backward_ != nullptr,
                 "{}: backward_layer must be a recurrent layer (LSTM, GRU or SimpleRNN). "
                 "Received: {}",
                 name(), describe(*options_.backward_layer));
  }
  options_.backward_layer = nullptr;  // held as backward_
  const RecurrentOptions &f = forward_->options(), &b = backward_->options();
  OSPREY_CHECK(f.go_backwards != b.go_backwards,
               "{}: the forward and backward layers must have different go_backwards. Received: "
               "forward go_backwards={}, backward go_backwards={}",
               name(), f.go_backwards, b.go_backwards);
  OSPREY_CHECK(f.return_sequences == b.return_sequences && f.stateful == b.stateful,
               "{}: the forward and backward layers must have the same return_sequences and "
               "stateful. Received: forward {}/{}, backward {}/{}",
               name(), f.return_sequences, f.stateful, b.return_sequences, b.stateful);
  // Keras's Bidirectional: with sequences out, a padded step is zeros in both directions (the
  // forward layer would otherwise carry its last state there, the backward its initial one).
  forward_->set_zero_output_for_mask(f.return_sequences);
  backward_->set_zero_output_for_mask(b.return_sequences);
  forward_->set_path_prefix(path());
  backward_->set_path_prefix(path());
}

Tensor Bidirectional::compute_mask(const std::vector<Variable>& /*inputs*/,
                                   const Tensor& mask) const {
  return forward_->options().return_sequences ? mask : Tensor();
}

void Bidirectional::set_path_prefix(const std::string& prefix) {
  Layer::set_path_prefix(prefix);
  forward_->set_path_prefix(path());
  backward_->set_path_prefix(path());
}

void Bidirectional::build_single(const Shape& input_shape) {
  forward_->build({input_shape});
  backward_->build({input_shape});
}

Shape Bidirectional::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  OSPREY_CHECK(options_.merge_mode.has_value(),
               "{}: merge_mode none gives two outputs, which a layer call cannot return; use "
               "call_with_state()",
               name());
  Shape out = forward_->compute_output_shape(input_shapes);
  if (*options_.merge_mode == "concat") {
    out[out.ndim() - 1] += backward_->compute_output_shape(input_shapes)[out.ndim() - 1];
  }
  return out;
}

size_t Bidirectional::num_outputs() const {
  const size_t outputs = options_.merge_mode ? 1 : 2;
  if (!forward_->options().return_state) return outputs;
  return outputs + forward_->num_states() + backward_->num_states();
}

void Bidirectional::check_initial_state(const std::vector<Shape>& states, int64_t batch) const {
  OSPREY_CHECK(states.size() % 2 == 0,
               "{}: initial_state must hold the forward layer's states then the backward "
               "layer's (an even count). Received: {}",
               name(), states.size());
  const auto half = states.begin() + static_cast<std::ptrdiff_t>(states.size() / 2);
  forward_->check_initial_state({states.begin(), half}, batch);
  backward_->check_initial_state({half, states.end()}, batch);
}

std::vector<Shape> Bidirectional::compute_output_shapes(const std::vector<Shape>& input_shapes,
                                                        const CallArgs<Shape>& args) {
  check_num_inputs(input_shapes.size(), 1);
  const int64_t batch = input_shapes[0][0];
  check_initial_state(args.initial_state, batch);
  std::vector<Shape> out;
  if (options_.merge_mode) {
    out.push_back(compute_output_shape(input_shapes));
  } else {
    out.push_back(forward_->compute_output_shape(input_shapes));
    out.push_back(backward_->compute_output_shape(input_shapes));
  }
  if (!forward_->options().return_state) return out;
  for (const auto& layer : {forward_, backward_}) {
    for (size_t i = 0; i < layer->num_states(); ++i) out.push_back({batch, layer->units()});
  }
  return out;
}

std::vector<Variable> Bidirectional::call_with_args(const std::vector<Variable>& inputs,
                                                    const CallArgs<Variable>& args, bool training) {
  check_num_inputs(inputs.size(), 1);
  BidirectionalOutputs r = call_with_state(inputs[0], args.initial_state, training);
  std::vector<Variable> out;
  if (options_.merge_mode) {
    out.push_back(r.output);
  } else {
    out.push_back(r.forward);
    out.push_back(r.backward);
  }
  if (forward_->options().return_state) out.insert(out.end(), r.states.begin(), r.states.end());
  return out;
}

Variable Bidirectional::merge(const Variable& forward, const Variable& backward) const {
  const std::string& mode = *options_.merge_mode;
  if (mode == "concat") return autograd::concat({forward, backward}, -1);
  if (mode == "sum") return autograd::add(forward, backward);
  if (mode == "mul") return autograd::mul(forward, backward);
  return autograd::mul(autograd::add(forward, backward), 0.5);  // ave
}

BidirectionalOutputs Bidirectional::call_with_state(const Variable& x,
                                                    const std::vector<Variable>& initial_state,
                                                    bool training) {
  OSPREY_CHECK(x.defined(), "{}: received an undefined input", name());
  if (!built()) build({x.shape()});
  std::vector<Shape> state_shapes;
  for (const Variable& s : initial_state) {
    OSPREY_CHECK(s.defined(), "{}: received an undefined initial_state", name());
    state_shapes.push_back(s.shape());
  }
  check_initial_state(state_shapes, x.shape()[0]);
  const auto half = initial_state.begin() + static_cast<std::ptrdiff_t>(initial_state.size() / 2);
  const autograd::RnnOutputs f =
      forward_->call_with_state(x, {initial_state.begin(), half}, training);
  const autograd::RnnOutputs b =
      backward_->call_with_state(x, {half, initial_state.end()}, training);
  const auto cast = [&](const Variable& v) {
    return v.dtype() == compute_dtype() ? v : autograd::cast(v, compute_dtype());
  };
  BidirectionalOutputs out;
  out.forward = cast(f.outputs);
  out.backward = cast(b.outputs);
  // The backward layer's outputs come in its processing order: step t back to position t.
  if (backward_->options().return_sequences) out.backward = autograd::flip(out.backward, 1);
  if (options_.merge_mode) out.output = merge(out.forward, out.backward);
  for (const autograd::RnnOutputs* r : {&f, &b}) {
    out.states.push_back(r->h);
    if (r->c.defined()) out.states.push_back(r->c);
  }
  return out;
}

Variable Bidirectional::call_single(const Variable& x, bool training) {
  OSPREY_CHECK(options_.merge_mode.has_value(),
               "{}: merge_mode none gives two outputs, which a layer call cannot return; use "
               "call_multi() or call_with_state()",
               name());
  OSPREY_CHECK(!forward_->options().return_state,
               "{}: return_state=true gives {} outputs (the output, then the forward and "
               "backward states); use call_multi() or call_with_state()",
               name(), num_outputs());
  return call_with_state(x, {}, training).output;
}

void Bidirectional::reset_states() {
  forward_->reset_states();
  backward_->reset_states();
}

nlohmann::json Bidirectional::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["merge_mode"] = options_.merge_mode ? nlohmann::json(*options_.merge_mode) : nlohmann::json();
  c["layer"] = serialize_layer(*forward_);
  c["backward_layer"] = serialize_layer(*backward_);
  return c;
}

std::shared_ptr<Layer> Bidirectional::from_config(const nlohmann::json& c) {
  BidirectionalOptions o;
  read_base_options(c, o);
  if (c.contains("merge_mode")) {
    o.merge_mode = c["merge_mode"].is_null()
                       ? std::nullopt
                       : std::optional<std::string>(c["merge_mode"].get<std::string>());
  }
  if (c.contains("backward_layer") && !c["backward_layer"].is_null())
    o.backward_layer = deserialize_layer(c["backward_layer"], "backward_layer");
  return std::make_shared<Bidirectional>(deserialize_layer(c.at("layer"), "layer"), std::move(o));
}

}  // namespace osprey::nn
