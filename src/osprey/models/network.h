// Network: a layer made of layers (what Keras calls a Model), the architecture that train/ fits
// and models/saving.h saves. Sequential chains layers; Functional runs a graph built with the
// functional API. A Network names its weights under its own path: `sequential/dense_1/kernel`.
// Training is not here: train::Model (osprey::Model, the user's handle) holds one of these plus
// a Trainer; the two names differ so a reader never has to keep two Models apart.
//   auto m = std::make_shared<models::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{
//       layers::Dense(64, "relu"), layers::Dense(10)});
//   Variable logits = (*m)(x);          // builds every layer from x's shape
//   fmt::print("{}", m->summary());
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "osprey/nn/layer.h"

namespace osprey::models {

using autograd::Variable;

class Network : public nn::Layer {
 public:
  using nn::Layer::Layer;

  // The layers directly inside this model, in order.
  virtual std::vector<std::shared_ptr<nn::Layer>> layers() const = 0;
  std::vector<std::shared_ptr<nn::Layer>> sublayers() const override { return layers(); }
  // ValueError naming the model and its layers when none has this name.
  std::shared_ptr<nn::Layer> get_layer(const std::string& name) const;
  // Runs the model on several inputs and returns every output (one each for Sequential).
  virtual std::vector<Variable> call_all(const std::vector<Variable>& inputs, bool training) = 0;
  virtual size_t num_inputs() const { return 1; }
  size_t num_outputs() const override { return 1; }

  void set_path_prefix(const std::string& prefix) override;
  // A model's output carries the mask its own layers left on it (none when the last of them
  // consumed or dropped it): the model itself adds or removes nothing.
  bool supports_masking() const override { return true; }
  Tensor compute_mask(const std::vector<Variable>& /*inputs*/,
                      const Tensor& /*mask*/) const override {
    return {};
  }
  // Layer::replace_sublayer for the direct layers: ValueError when no layer has that name;
  // NotImplementedError for models that cannot swap layers (Sequential and Functional can).
  void replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) override;

  // Keras's table: layer (type), output shape, params; totals with bytes.
  std::string summary() const;
  // One row per direct layer: name, class, output shape (batch -1), parameter count.
  struct LayerRow {
    std::string name, class_name;
    Shape output_shape;
    int64_t params;
  };
  virtual std::vector<LayerRow> summary_rows() const = 0;

  // All weights in variables() order, as copies; set_weights checks count, shapes and dtypes.
  std::vector<Tensor> get_weights() const;
  void set_weights(const std::vector<Tensor>& weights);

 protected:
  // What every replace_sublayer checks: layer not null, `name` a direct layer (the ValueError
  // listing the layers), and layer keeping that name. Returns the layer being replaced, after
  // adopting the new one into this model's paths.
  std::shared_ptr<nn::Layer> adopt_replacement(const std::string& name,
                                               const std::shared_ptr<nn::Layer>& layer);

  Variable call(const std::vector<Variable>& inputs, bool training) override;
  // A model nested in a functional graph gives all its outputs (call_all()).
  std::vector<Variable> call_with_args(const std::vector<Variable>& inputs,
                                       const nn::CallArgs<Variable>& args, bool training) override;
  // Each layer casts its own inputs, so a float32 first layer sees them unrounded.
  bool autocasts_inputs() const override { return false; }
  // Called by subclasses whenever a layer joins the model.
  void adopt(const std::shared_ptr<nn::Layer>& layer);
};

struct SequentialOptions {
  std::string name{};   // default "sequential", "sequential_1", ...
  Shape input_shape{};  // without the batch axis; when given, the model builds immediately
  bool trainable = true;
  // The model's dtype policy (empty: the global one). Its layers keep their own; compile() reads
  // this one (mixed_float16 gets loss scaling).
  std::string dtype{};
};

class Sequential : public Network {
 public:
  explicit Sequential(std::vector<std::shared_ptr<nn::Layer>> layers = {},
                      SequentialOptions options = {});
  void add(std::shared_ptr<nn::Layer> layer);
  void pop();
  void replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) override;
  // Layer::remove_sublayer: true; ValueError when no layer has that name.
  bool remove_sublayer(const std::string& name) override;
  std::vector<std::shared_ptr<nn::Layer>> layers() const override { return layers_; }
  std::vector<Variable> call_all(const std::vector<Variable>& inputs, bool training) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<LayerRow> summary_rows() const override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);

 protected:
  void build_impl(const std::vector<Shape>& input_shapes) override;

 private:
  std::vector<std::shared_ptr<nn::Layer>> layers_;
};

// A graph of layer calls from inputs to outputs, made with the functional API:
//   auto in = nn::Input({784});
//   auto h = layers::Dense(64, "relu")(in);
//   auto m = std::make_shared<models::Functional>(std::vector{in},
//   std::vector{layers::Dense(10)(h)});
// A layer called several times (shared) keeps one set of weights. A layer call with several
// outputs (nn::Layer::call_multi: an LSTM with return_state) is one node whose outputs feed later
// layers or are model outputs each, as in Keras's seq2seq:
//   auto enc = layers::LSTM(64, {.return_state = true})->call_multi({enc_in});  // [out, h, c]
//   auto dec = layers::LSTM(64, {.return_sequences = true})->call_multi(
//       {dec_in}, {.initial_state = {enc[1], enc[2]}});
// The config names each tensor as Keras does, [layer name, call index, output index], and keeps
// a call's initial_state as Keras 2's inbound_nodes did: a fourth element of the first input's
// reference, {"initial_state": [[name, call, output], ...]}.
class Functional : public Network {
 public:
  Functional(std::vector<nn::SymbolicTensor> inputs, std::vector<nn::SymbolicTensor> outputs,
             std::string name = "");
  std::vector<std::shared_ptr<nn::Layer>> layers() const override { return layers_; }
  std::vector<Variable> call_all(const std::vector<Variable>& inputs, bool training) override;
  size_t num_inputs() const override { return inputs_.size(); }
  size_t num_outputs() const override { return outputs_.size(); }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes,
                                           const nn::CallArgs<Shape>& args) override;
  std::vector<LayerRow> summary_rows() const override;
  nlohmann::json get_config() const override;
  // Reads get_config()'s description; without execution_order (Keras's configs) the calls run
  // in Keras's order: passes over the layers in file order, each call once what it reads exists.
  static std::shared_ptr<nn::Layer> from_config(const nlohmann::json& config);
  // Every call of the layer named `name` runs `layer` instead (same name; it must accept the same
  // inputs). The symbolic graph the model was made from is left as it is, so other models built
  // from it keep their layers. ValueError for an unknown name, a null layer or another name.
  void replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) override;

 private:
  using Node = nn::SymbolicTensor::Node;
  std::vector<nn::SymbolicTensor> inputs_, outputs_;
  std::vector<const Node*> order_;                       // layer-call nodes in execution order
  std::vector<std::shared_ptr<nn::Layer>> node_layers_;  // the layer each node of order_ runs
  std::vector<std::shared_ptr<nn::Layer>> layers_;
};

// Registers Sequential and Functional with the layer registry (idempotent), so saved models
// and nested models can be rebuilt.
void register_model_classes();

}  // namespace osprey::models
