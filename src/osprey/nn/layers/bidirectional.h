// Bidirectional: keras.layers.Bidirectional, an RNN layer run over a sequence both ways. The
// wrapper rebuilds two copies of the layer from its config, forward_<name> and backward_<name>
// (go_backwards flipped), or takes the given backward layer, and merges their outputs; with
// return_sequences the backward outputs are re-reversed in time first, so step t of both sees
// the whole sequence. Weights as Keras names them: bidirectional/forward_lstm/kernel, ...
//   auto bi = layers::Bidirectional(layers::LSTM(32, {.return_sequences = true}));
//   Variable y = bi(x);                        // [8, 20, 16] -> [8, 20, 64] (concat)
//   auto both = bi->call_with_state(x);        // both.forward, both.backward, both.states
// When the layer has return_state, call_multi() gives Keras's list: the merged output (or the
// forward then the backward output for merge_mode none), the forward layer's final states, then
// the backward layer's; initial_state is split the same way (forward half, backward half).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/nn/layers/recurrent.h"

namespace osprey::nn {

struct BidirectionalOptions {
  // "concat" (the last axis), "sum", "mul", "ave", or none (Keras's None: the two outputs apart,
  // from call_with_state; a layer call is then an error).
  std::optional<std::string> merge_mode = "concat";
  // The backward layer itself (not a copy), with go_backwards opposite to the layer's and the
  // same return_sequences and stateful; none: a copy of the layer with go_backwards flipped.
  std::shared_ptr<Layer> backward_layer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// What call_with_state returns: each direction's outputs (the backward ones re-reversed in time
// with return_sequences), the merged output (undefined for merge_mode none), and the final
// states, the forward layer's then the backward layer's (h, or h and c for LSTM).
struct BidirectionalOutputs {
  Variable output, forward, backward;
  std::vector<Variable> states;
};

class Bidirectional : public SingleInputLayer {
 public:
  explicit Bidirectional(std::shared_ptr<Layer> layer, BidirectionalOptions options = {});

  const std::shared_ptr<Recurrent>& forward_layer() const { return forward_; }
  const std::shared_ptr<Recurrent>& backward_layer() const { return backward_; }
  const std::optional<std::string>& merge_mode() const { return options_.merge_mode; }

  // Keras's initial_state: the forward layer's states then the backward layer's, or empty.
  BidirectionalOutputs call_with_state(const Variable& x,
                                       const std::vector<Variable>& initial_state = {},
                                       bool training = false);
  void reset_states();  // both layers' (stateful)

  std::vector<std::shared_ptr<Layer>> sublayers() const override { return {forward_, backward_}; }
  void set_path_prefix(const std::string& prefix) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes,
                                           const CallArgs<Shape>& args) override;
  size_t num_outputs() const override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  // The input's mask reaches both layers; the output keeps it with return_sequences.
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const std::vector<Variable>& inputs, const Tensor& mask) const override;

 protected:
  void build_single(const Shape& input_shape) override;
  Variable call_single(const Variable& x, bool training) override;
  std::vector<Variable> call_with_args(const std::vector<Variable>& inputs,
                                       const CallArgs<Variable>& args, bool training) override;

 private:
  // ValueError unless initial_state is empty or an even count, each half fitting its layer.
  void check_initial_state(const std::vector<Shape>& states, int64_t batch) const;

  Variable merge(const Variable& forward, const Variable& backward) const;

  BidirectionalOptions options_;
  std::shared_ptr<Recurrent> forward_, backward_;
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::Bidirectional> Bidirectional(std::shared_ptr<nn::Layer> layer,
                                                     nn::BidirectionalOptions options = {}) {
  return nn::make_layer<nn::Bidirectional>(std::move(layer), std::move(options));
}
}  // namespace osprey::layers
