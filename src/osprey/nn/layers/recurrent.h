// The recurrent layers of keras.layers: LSTM, GRU and SimpleRNN, over a whole sequence
// x [batch, T, features] with the autograd RNN ops (oneDNN's RNN primitives). They share one
// base, Recurrent, that holds the weights in Keras 3's layouts (kernel [features, G * units],
// recurrent_kernel [units, G * units], bias) and the sequence options:
//   return_sequences: [batch, T, units] (every step) rather than [batch, units] (the last);
//   go_backwards: the reversed sequence, outputs in processing order, as Keras;
//   dropout, recurrent_dropout: in training, one mask per sequence on the inputs (then the whole
//     sequence runs as one op) and one on the state entering each step (then the layer runs the
//     op one step at a time);
//   stateful: the final states of a call are the initial states of the next (reset_states());
//   masks: the input's mask (Variable::mask(), from Embedding(mask_zero) or Masking) skips the
//     padded steps: each keeps the state and outputs the carried state, or zeros with
//     zero_output_for_mask; with return_sequences the output keeps the mask (reversed in time
//     with go_backwards, as the outputs are; Keras leaves it unreversed), without it the mask
//     ends here. Padded and unpadded sequences give the same outputs at the real steps.
// Keras's return_state and initial_state: with return_state a call gives [output, h] ([output,
// h, c] for LSTM) through Layer::call_multi(), eager or in the functional graph, where the
// states can feed other layers (initial_state of a decoder) or be model outputs;
// call_with_state() gives the same as a struct. The states carry no mask.
//   auto lstm = layers::LSTM(64, {.return_sequences = true});
//   Variable y = lstm(x);                                   // [32, 100, 16] -> [32, 100, 64]
//   auto [seq, h, c] = lstm->call_with_state(x, {h0, c0});  // states in, final states out
//   auto enc = layers::LSTM(64, {.return_state = true})->call_multi({Input({100, 16})});
//   auto dec = layers::LSTM(64)->call_multi({dec_in}, {.initial_state = {enc[1], enc[2]}});
#pragma once

#include <optional>
#include <vector>

#include "osprey/autograd/ops/rnn.h"
#include "osprey/nn/layer.h"

namespace osprey::nn {

struct RecurrentOptions {
  std::string activation = "tanh";               // SimpleRNN: tanh or relu; LSTM and GRU: tanh
  std::string recurrent_activation = "sigmoid";  // LSTM and GRU: sigmoid
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;  // LSTM: the forget gate's bias starts at 1
  bool reset_after = true;       // GRU: the reset gate after the recurrent product (Keras 3)
  Regularizer kernel_regularizer{};
  Regularizer recurrent_regularizer{};
  Regularizer bias_regularizer{};
  bool return_sequences = false;
  bool return_state = false;  // a call gives the output then the final states (call_multi)
  bool go_backwards = false;
  double dropout = 0.0;            // of the inputs, in [0, 1); training only
  double recurrent_dropout = 0.0;  // of the state entering each step, in [0, 1); training only
  // Keeps the final states as the next call's initial states (a fixed batch size; no gradient
  // flows across calls).
  bool stateful = false;
  std::optional<uint64_t> seed{};  // of the dropout masks; none: drawn from the global seed
  // Masked steps output zeros rather than the carried state (Keras's RNN argument; Bidirectional
  // sets it on its layers when they return sequences, as Keras does).
  bool zero_output_for_mask = false;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Recurrent : public SingleInputLayer {
 public:
  int64_t units() const { return units_; }
  const RecurrentOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }
  // Keras's return_state and initial_state: the outputs (every step, or the last when
  // return_sequences is off) and the final states; initial_state holds h0 (and c0 for LSTM),
  // [batch, units] each, or is empty (zeros).
  autograd::RnnOutputs call_with_state(const Variable& x,
                                       const std::vector<Variable>& initial_state = {},
                                       bool training = false);
  // The output's shape (the first output's with return_state).
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // The output's, then with return_state each state's [batch, units]. ValueError naming the
  // layer for initial_state of the wrong count or shape.
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes,
                                           const CallArgs<Shape>& args) override;
  size_t num_outputs() const override { return options_.return_state ? 1 + num_states() : 1; }
  size_t num_states() const { return cell_ == RnnCell::lstm ? 2 : 1; }
  // ValueError unless `states` is empty or num_states() shapes [batch, units] (batch -1: any).
  void check_initial_state(const std::vector<Shape>& states, int64_t batch) const;
  nlohmann::json get_config() const override;
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const std::vector<Variable>& inputs, const Tensor& mask) const override;
  void set_zero_output_for_mask(bool zero) { options_.zero_output_for_mask = zero; }

  // stateful: the states the next call starts from (h, then c for LSTM; empty before the first
  // call), and Keras's reset_states(), which sets them to zeros.
  const std::vector<Tensor>& states() const { return states_; }
  void reset_states();

  uint64_t seed_calls() const override { return calls_; }
  void set_seed_calls(uint64_t calls) override { calls_ = calls; }

 protected:
  Recurrent(std::string class_name, RnnCell cell, int64_t units, RecurrentOptions options);
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;
  // [output] or, with return_state, [output, h] / [output, h, c], from initial_state when given.
  std::vector<Variable> call_with_args(const std::vector<Variable>& inputs,
                                       const CallArgs<Variable>& args, bool training) override;
  static RecurrentOptions read_options(const nlohmann::json& c);

 private:
  int64_t gates() const;
  void check_input_shape(const Shape& s) const;
  // The initial states of a stateful call: the kept ones, checked against the batch size.
  std::vector<Variable> kept_states(int64_t batch) const;
  // recurrent_dropout in training: the op one step at a time, the state entering each step
  // times rec_mask [batch, units].
  // A masked step (o.mask) keeps h and c and outputs h, or zeros with zero_output_for_mask.
  autograd::RnnOutputs step_by_step(const Variable& x, Variable h, Variable c, const Variable& k,
                                    const Variable& r, const Variable& b, const RnnOptions& o,
                                    const Variable& rec_mask) const;

  RnnCell cell_;  // lstm, gru (reset_after chosen by the options) or simple_rnn
  int64_t units_;
  RecurrentOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
  std::vector<Tensor> states_;  // stateful: the last call's final states, detached
  uint64_t calls_ = 0;          // training calls with dropout so far, for a layer with its own seed
};

class LSTM : public Recurrent {
 public:
  explicit LSTM(int64_t units, RecurrentOptions options = {})
      : Recurrent("LSTM", RnnCell::lstm, units, std::move(options)) {}
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
};

class GRU : public Recurrent {
 public:
  explicit GRU(int64_t units, RecurrentOptions options = {})
      : Recurrent("GRU", RnnCell::gru, units, std::move(options)) {}
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
};

class SimpleRNN : public Recurrent {
 public:
  explicit SimpleRNN(int64_t units, RecurrentOptions options = {})
      : Recurrent("SimpleRNN", RnnCell::simple_rnn, units, std::move(options)) {}
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::LSTM> LSTM(int64_t units, nn::RecurrentOptions options = {}) {
  return nn::make_layer<nn::LSTM>(units, std::move(options));
}
inline nn::LayerRef<nn::GRU> GRU(int64_t units, nn::RecurrentOptions options = {}) {
  return nn::make_layer<nn::GRU>(units, std::move(options));
}
inline nn::LayerRef<nn::SimpleRNN> SimpleRNN(int64_t units, nn::RecurrentOptions options = {}) {
  return nn::make_layer<nn::SimpleRNN>(units, std::move(options));
}
}  // namespace osprey::layers
