#include "osprey/nn/layers/recurrent.h"

#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/nn/layers/options.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

namespace {
// Keras's DropoutRNNCell mask: ones of `shape` dropped at `rate` and scaled by 1 / (1 - rate),
// a constant (the gradient flows through the product with it, not into it).
Variable dropout_mask(const Shape& shape, double rate, uint64_t seed, const TensorOptions& opts) {
  const Tensor keep = random_bernoulli(shape, 1.0 - rate,
                                       {.seed = seed, .dtype = opts.dtype, .device = opts.device});
  return Variable(osprey::mul(keep, 1.0 / (1.0 - rate)));
}

// The recurrent mask's seed: another stream than the input mask's (Philox streams by seed).
constexpr uint64_t kRecurrentSeedOffset = 0x9E3779B97F4A7C15ULL;
}  // namespace

Recurrent::Recurrent(std::string class_name, RnnCell cell, int64_t units, RecurrentOptions options)
    : SingleInputLayer(class_name, base_options(options)),
      cell_(cell),
      units_(units),
      options_(std::move(options)) {
  OSPREY_CHECK(units > 0, "{}: units must be positive. Received: units={}", class_name, units);
  if (cell == RnnCell::simple_rnn) {
    OSPREY_CHECK(options_.activation == "tanh" || options_.activation == "relu",
                 "{}: activation must be 'tanh' or 'relu'. Received: activation='{}'", class_name,
                 options_.activation);
  } else {
    // The RNN kernels (oneDNN's and the reference) compute Keras's default gates only.
    OSPREY_CHECK(options_.activation == "tanh" && options_.recurrent_activation == "sigmoid",
                 "{}: only activation='tanh' with recurrent_activation='sigmoid' runs on the RNN "
                 "kernels. Received: activation='{}', recurrent_activation='{}'",
                 class_name, options_.activation, options_.recurrent_activation);
  }
  for (const auto& [field, rate] : {std::pair{"dropout", options_.dropout},
                                    {"recurrent_dropout", options_.recurrent_dropout}}) {
    OSPREY_CHECK(rate >= 0.0 && rate < 1.0, "{}: {} must be in [0, 1). Received: {}={}", name(),
                 field, field, rate);
  }
}

int64_t Recurrent::gates() const {
  return cell_ == RnnCell::lstm ? 4 : cell_ == RnnCell::simple_rnn ? 1 : 3;
}

void Recurrent::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() == 3, "{}: expected a 3-D input [batch, timesteps, features]. Received: {}",
               name(), s.to_string());
}

void Recurrent::build_single(const Shape& input_shape) {
  check_input_shape(input_shape);
  const int64_t g = gates(), u = units_;
  kernel_ = add_weight("kernel", {input_shape[2], g * u}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {u, g * u}, options_.recurrent_initializer,
                                 true, options_.recurrent_regularizer);
  if (!options_.use_bias) return;
  Initializer init = options_.bias_initializer;
  if (cell_ == RnnCell::lstm && options_.unit_forget_bias) {
    // Keras: the input gate's bias from bias_initializer, the forget gate's ones, the rest
    // from bias_initializer again.
    const Initializer base = options_.bias_initializer;
    init = Initializer("unit_forget_bias", base.to_json(),
                       [base, u](const Shape& shape, DType dtype, uint64_t seed) {
                         Tensor b = base(shape, dtype, seed);
                         b.slice(0, u, 2 * u).fill_(1.0);
                         return b;
                       });
  }
  const bool two_rows = cell_ == RnnCell::gru && options_.reset_after;
  bias_ = add_weight("bias", two_rows ? Shape{2, g * u} : Shape{g * u}, init, true,
                     options_.bias_regularizer);
}

Shape Recurrent::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape& s = input_shapes[0];
  check_input_shape(s);
  return options_.return_sequences ? Shape{s[0], s[1], units_} : Shape{s[0], units_};
}

void Recurrent::check_initial_state(const std::vector<Shape>& states, int64_t batch) const {
  const size_t want = num_states();
  OSPREY_CHECK(states.empty() || states.size() == want,
               "{}: initial_state must hold {} state(s) ({}). Received: {}", name(), want,
               want == 2 ? "h and c" : "h", states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    const Shape& s = states[i];
    const bool ok = s.ndim() == 2 && s[1] == units_ && (batch < 0 || s[0] < 0 || s[0] == batch);
    OSPREY_CHECK(ok, "{}: initial_state[{}] ({}) must have shape [{}, {}]. Received: {}", name(), i,
                 i == 0 ? "h" : "c", batch < 0 ? std::string("batch") : std::to_string(batch),
                 units_, s.to_string());
  }
}

std::vector<Shape> Recurrent::compute_output_shapes(const std::vector<Shape>& input_shapes,
                                                    const CallArgs<Shape>& args) {
  std::vector<Shape> out{compute_output_shape(input_shapes)};
  const int64_t batch = input_shapes[0][0];
  check_initial_state(args.initial_state, batch);
  if (options_.return_state) out.resize(1 + num_states(), Shape{batch, units_});
  return out;
}

std::vector<Variable> Recurrent::call_with_args(const std::vector<Variable>& inputs,
                                                const CallArgs<Variable>& args, bool training) {
  check_num_inputs(inputs.size(), 1);
  autograd::RnnOutputs out = call_with_state(inputs[0], args.initial_state, training);
  if (!options_.return_state) return {out.outputs};
  std::vector<Variable> all{out.outputs, out.h};
  if (out.c.defined()) all.push_back(out.c);
  return all;
}

autograd::RnnOutputs Recurrent::call_with_state(const Variable& x_in,
                                                const std::vector<Variable>& initial_state,
                                                bool training) {
  OSPREY_CHECK(x_in.defined(), "{}: received an undefined input", name());
  check_input_shape(x_in.shape());
  if (!built()) build({x_in.shape()});
  std::vector<Shape> state_shapes;
  for (const Variable& s : initial_state) {
    OSPREY_CHECK(s.defined(), "{}: received an undefined initial_state", name());
    state_shapes.push_back(s.shape());
  }
  check_initial_state(state_shapes, x_in.shape()[0]);
  const auto cast = [&](const Variable& v) {
    return v.defined() && dtype_policy().casts_input(v.dtype()) ? autograd::cast(v, compute_dtype())
                                                                : v;
  };
  Variable x = cast(x_in);
  const int64_t batch = x.shape()[0];
  const std::vector<Variable> start =
      !initial_state.empty() || !options_.stateful ? initial_state : kept_states(batch);
  const Variable h0 = start.empty() ? Variable() : cast(start[0]);
  const Variable c0 = start.size() == 2 ? cast(start[1]) : Variable();
  RnnOptions o{.mask = x_in.mask(),
               .go_backwards = options_.go_backwards,
               .zero_output_for_mask = options_.zero_output_for_mask,
               .reset_after = options_.reset_after};
  if (cell_ == RnnCell::simple_rnn && options_.activation == "relu")
    o.activation = Activation::relu;
  const Variable k = autocast(kernel_), r = autocast(recurrent_kernel_), b = autocast(bias_);
  // Keras's dropout: one mask per sequence, the same at every step, drawn per training call.
  const bool drop = training && options_.dropout > 0.0;
  const bool recurrent_drop = training && options_.recurrent_dropout > 0.0;
  Variable rec_mask;
  if (drop || recurrent_drop) {
    const uint64_t seed = options_.seed ? *options_.seed + calls_++ : next_seed();
    const TensorOptions opts{x.dtype(), x.device()};
    if (drop) {
      x = autograd::mul(x, dropout_mask({batch, 1, x.shape()[2]}, options_.dropout, seed, opts));
    }
    if (recurrent_drop) {
      rec_mask = dropout_mask({batch, units_}, options_.recurrent_dropout,
                              seed + kRecurrentSeedOffset, opts);
    }
  }
  autograd::RnnOutputs out = recurrent_drop ? step_by_step(x, h0, c0, k, r, b, o, rec_mask)
                             : cell_ == RnnCell::lstm ? autograd::lstm(x, h0, c0, k, r, b, o)
                             : cell_ == RnnCell::gru  ? autograd::gru(x, h0, k, r, b, o)
                                                      : autograd::simple_rnn(x, h0, k, r, b, o);
  if (options_.stateful) {
    states_ = {out.h.value().clone()};
    if (out.c.defined()) states_.push_back(out.c.value().clone());
  }
  if (!options_.return_sequences) out.outputs = out.h;  // the last step's output is the state
  return out;
}

autograd::RnnOutputs Recurrent::step_by_step(const Variable& x, Variable h, Variable c,
                                             const Variable& k, const Variable& r,
                                             const Variable& b, const RnnOptions& o,
                                             const Variable& rec_mask) const {
  // Keras's cells multiply the previous state h by the mask before the recurrent product (the
  // LSTM's carry c is not masked); the op over one step with h0 = h * mask is that step. A
  // padded step is blended here rather than by the op, which would carry the dropped h * mask.
  RnnOptions one = o;
  one.go_backwards = false;  // the steps are taken in processing order here
  one.mask = Tensor();
  const int64_t steps = x.shape()[1];
  const int64_t batch = x.shape()[0];
  std::vector<Variable> ys;
  ys.reserve(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = o.go_backwards ? steps - 1 - i : i;
    const Variable xt = autograd::narrow(x, 1, t, 1);
    const Variable hin = h.defined() ? autograd::mul(h, rec_mask) : h;
    autograd::RnnOutputs s = cell_ == RnnCell::lstm  ? autograd::lstm(xt, hin, c, k, r, b, one)
                             : cell_ == RnnCell::gru ? autograd::gru(xt, hin, k, r, b, one)
                                                     : autograd::simple_rnn(xt, hin, k, r, b, one);
    if (o.mask.defined()) {
      // real [batch, 1]: 1 for a real step; the state moves only there.
      const Variable real(o.mask.narrow(1, t, 1).to(x.dtype()).contiguous());
      const Variable pad = autograd::rsub(1.0, real);
      const auto blend = [&](const Variable& next, const Variable& prev) {
        const Variable kept =
            prev.defined() ? prev : Variable(zeros(next.shape(), {next.dtype(), next.device()}));
        return autograd::add(autograd::mul(next, real), autograd::mul(kept, pad));
      };
      s.h = blend(s.h, h);
      if (s.c.defined()) s.c = blend(s.c, c);
      s.outputs = autograd::reshape(
          o.zero_output_for_mask ? autograd::mul(autograd::reshape(s.outputs, s.h.shape()), real)
                                 : s.h,
          {batch, 1, s.h.shape()[1]});
    }
    ys.push_back(s.outputs);
    h = s.h;
    c = s.c;
  }
  return {autograd::concat(ys, 1), h, c};
}

std::vector<Variable> Recurrent::kept_states(int64_t batch) const {
  if (states_.empty()) return {};
  OSPREY_CHECK(states_[0].shape()[0] == batch,
               "{}: a stateful layer keeps states for a batch of {}. Received: a batch of {} "
               "(every call of a stateful layer must have the same batch size)",
               name(), states_[0].shape()[0], batch);
  std::vector<Variable> out;
  for (const Tensor& s : states_) out.emplace_back(s);
  return out;
}

void Recurrent::reset_states() {
  for (Tensor& s : states_) s = zeros(s.shape(), {s.dtype(), s.device()});
}

Tensor Recurrent::compute_mask(const std::vector<Variable>& /*inputs*/, const Tensor& mask) const {
  if (!options_.return_sequences || !mask.defined()) return {};
  return options_.go_backwards ? autograd::flip(Variable(mask), 1).value() : mask;
}

Variable Recurrent::call_single(const Variable& x, bool training) {
  OSPREY_CHECK(!options_.return_state,
               "{}: return_state=true gives {} outputs (the output, then the states); use "
               "call_multi() or call_with_state()",
               name(), 1 + num_states());
  return call_with_state(x, {}, training).outputs;
}

nlohmann::json Recurrent::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["units"] = units_;
  c["activation"] = options_.activation;
  if (cell_ != RnnCell::simple_rnn) c["recurrent_activation"] = options_.recurrent_activation;
  write_kernel_bias_config(c, options_);
  c["recurrent_initializer"] = options_.recurrent_initializer.to_json();
  c["recurrent_regularizer"] = options_.recurrent_regularizer.to_json();
  if (cell_ == RnnCell::lstm) c["unit_forget_bias"] = options_.unit_forget_bias;
  if (cell_ == RnnCell::gru) c["reset_after"] = options_.reset_after;
  c["return_sequences"] = options_.return_sequences;
  c["return_state"] = options_.return_state;
  c["go_backwards"] = options_.go_backwards;
  c["stateful"] = options_.stateful;
  c["unroll"] = false;
  c["zero_output_for_mask"] = options_.zero_output_for_mask;
  c["dropout"] = options_.dropout;
  c["recurrent_dropout"] = options_.recurrent_dropout;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json();
  return c;
}

RecurrentOptions Recurrent::read_options(const nlohmann::json& c) {
  RecurrentOptions o;
  read_base_options(c, o);
  read_kernel_bias_config(c, o);
  o.return_state = c.value("return_state", false);
  o.dropout = c.value("dropout", 0.0);
  o.recurrent_dropout = c.value("recurrent_dropout", 0.0);
  o.stateful = c.value("stateful", false);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  o.activation = c.value("activation", std::string("tanh"));
  o.recurrent_activation = c.value("recurrent_activation", std::string("sigmoid"));
  if (c.contains("recurrent_initializer"))
    o.recurrent_initializer = initializers::from_json(c["recurrent_initializer"]);
  o.recurrent_regularizer =
      Regularizer::from_json(c.value("recurrent_regularizer", nlohmann::json()));
  o.unit_forget_bias = c.value("unit_forget_bias", true);
  o.reset_after = c.value("reset_after", true);
  o.return_sequences = c.value("return_sequences", false);
  o.go_backwards = c.value("go_backwards", false);
  o.zero_output_for_mask = c.value("zero_output_for_mask", false);
  return o;
}

std::shared_ptr<Layer> LSTM::from_config(const nlohmann::json& c) {
  return std::make_shared<LSTM>(c.at("units").get<int64_t>(), read_options(c));
}
std::shared_ptr<Layer> GRU::from_config(const nlohmann::json& c) {
  return std::make_shared<GRU>(c.at("units").get<int64_t>(), read_options(c));
}
std::shared_ptr<Layer> SimpleRNN::from_config(const nlohmann::json& c) {
  return std::make_shared<SimpleRNN>(c.at("units").get<int64_t>(), read_options(c));
}

}  // namespace osprey::nn
