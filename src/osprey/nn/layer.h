// Layer: the building block of models, as in Keras. A layer owns named weights (created lazily
// by build() on the first call, from the input shape), computes call() on Variables, and
// describes itself with get_config() so a model can be saved and rebuilt. Weights are named by
// path, `sequential/dense_1/kernel`: checkpoints, layout maps, parameter-server shards and
// quantization all key on these paths.
//   auto dense = layers::Dense(64, "relu");         // LayerRef<Dense>: nothing built yet
//   Variable y = dense(x, /*training=*/true);        // builds kernel [in, 64] and bias [64]
//   for (auto& v : dense->variables()) fmt::print("{}\n", v.name());  // dense/kernel, dense/bias
//   SymbolicTensor h = dense(Input({784}));          // the functional API (models/functional.h)
//   auto outs = lstm->call_multi({x}, {.initial_state = {h0, c0}});  // several outputs (below)
// Subclasses implement build_impl() and call(); single-input layers derive from
// SingleInputLayer and implement build_single() and call_single().
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/nn/initializers.h"
#include "osprey/nn/name_scope.h"
#include "osprey/nn/regularizer.h"
#include "osprey/precision/dtype_policy.h"

namespace osprey::nn {

using autograd::Variable;
class Layer;

struct LayerOptions {
  std::string name{};  // default: unique snake_case of the class name (dense, dense_1, ...)
  // A dtype policy name (precision/dtype_policy.h: "float32", "mixed_bfloat16", ...); empty:
  // the global policy (config::dtype_policy()) at construction, as Keras.
  std::string dtype{};
  bool trainable = true;
};

// A placeholder in the functional API (Keras's KerasTensor): a shape whose batch dimension is
// -1, and the layer call that produces it: output index() of that call's node, as Keras's
// keras_history (layer, node, tensor index). Most calls have one output; a recurrent layer with
// return_state gives the sequence output and the final states.
class SymbolicTensor {
 public:
  struct Node {
    std::shared_ptr<Layer> layer;  // null for a model input
    std::vector<SymbolicTensor> inputs;
    std::vector<SymbolicTensor> initial_state;  // the call's keyword tensors (CallArgs)
    size_t num_outputs = 1;
    std::string input_name;  // for model inputs
  };
  SymbolicTensor() = default;
  SymbolicTensor(Shape shape, DType dtype, std::shared_ptr<const Node> node, size_t index = 0)
      : shape_(shape), dtype_(dtype), node_(std::move(node)), index_(index) {}
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  const std::shared_ptr<const Node>& node() const { return node_; }
  size_t index() const { return index_; }  // which output of node()
  bool defined() const { return node_ != nullptr; }

 private:
  Shape shape_;
  DType dtype_ = DType::float32;
  std::shared_ptr<const Node> node_;
  size_t index_ = 0;
};

// The keyword tensor arguments of a layer call beside its inputs, as Keras passes them by name:
// the recurrent layers' initial_state. T is Variable (eager), SymbolicTensor (graph) or Shape
// (shape inference).
template <class T>
struct CallArgs {
  std::vector<T> initial_state;
  bool empty() const { return initial_state.empty(); }
};

// A model input: shape without the batch dimension, as keras.Input; -1 (Keras's None) for an
// axis of any size, such as the steps of Input((None, features)) for sequences of any length.
SymbolicTensor Input(const Shape& shape, const std::string& name = "",
                     DType dtype = DType::float32);

struct Weight {
  Variable variable;
  std::string name;  // "kernel", "bias", "moving_mean"
  bool trainable = true;
  Regularizer regularizer;
};

class Layer : public std::enable_shared_from_this<Layer> {
 public:
  Layer(std::string class_name, const LayerOptions& options);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  const std::string& class_name() const { return class_name_; }
  // Where this layer's weights live: "<prefix>/<name>"; the prefix is set by the enclosing model.
  std::string path() const { return prefix_.empty() ? name_ : prefix_ + "/" + name_; }
  // Renames existing weights too, so a layer built standalone can join a model.
  virtual void set_path_prefix(const std::string& prefix);

  // Runs the layer, building it first when needed.
  Variable operator()(const Variable& x, bool training = false);
  Variable operator()(const std::vector<Variable>& xs, bool training = false);
  // Records a call in the functional graph (builds the layer from the symbolic shape).
  SymbolicTensor operator()(const SymbolicTensor& x);
  SymbolicTensor operator()(const std::vector<SymbolicTensor>& xs);

  // A call with every output and the keyword tensors (Keras's `outputs = layer(x,
  // initial_state=...)`). C++ cannot return a tensor or a list from one operator() as Python
  // does, so the list has its own entry: operator() keeps returning one tensor (and refuses a
  // layer with several outputs), call_multi() always returns the list, one element for most
  // layers. Output 0 carries the mask as operator() sets it; the other outputs (states) carry
  // none. The symbolic form records one node with num_outputs() tensors in the graph.
  std::vector<Variable> call_multi(const std::vector<Variable>& xs,
                                   const CallArgs<Variable>& args = {}, bool training = false);
  std::vector<SymbolicTensor> call_multi(const std::vector<SymbolicTensor>& xs,
                                         const CallArgs<SymbolicTensor>& args = {});
  // How many tensors a call returns: 1 but for layers such as LSTM(return_state=true).
  virtual size_t num_outputs() const { return 1; }

  // Creates the weights for inputs of these shapes (batch dimension may be -1). Idempotent.
  void build(const std::vector<Shape>& input_shapes);
  bool built() const { return built_; }
  const std::vector<Shape>& build_input_shapes() const { return build_shapes_; }
  // Output shape for inputs of these shapes (batch -1 allowed). The default runs call() once on
  // a zero batch of one, without gradients; layers override it when that is wasteful.
  virtual Shape compute_output_shape(const std::vector<Shape>& input_shapes);
  // Every output's shape for a call with these inputs and keyword tensors. The default: the
  // one output of compute_output_shape(), and ValueError when given keyword tensors.
  virtual std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes,
                                                   const CallArgs<Shape>& args);

  // This layer's weights and those of its sublayers, in creation order.
  virtual std::vector<Variable> variables() const;
  std::vector<Variable> trainable_variables() const;
  std::vector<Variable> non_trainable_variables() const;
  const std::vector<Weight>& own_weights() const { return weights_; }
  virtual std::vector<std::shared_ptr<Layer>> sublayers() const { return {}; }
  // Swaps the direct sublayer named `name` for `layer` (same name; it takes over the position
  // and path). quant::quantize() uses it to swap layers by path. Containers (models) override
  // it; the default throws NotImplementedError naming the class.
  virtual void replace_sublayer(const std::string& name, std::shared_ptr<Layer> layer);
  // Removes the direct sublayer named `name` and returns true, in containers that run their
  // sublayers one after the other, each on the previous one's output (Sequential), so that
  // quant::quantize() can fold a layer into the one before it. Other layers and containers
  // return false and keep everything.
  virtual bool remove_sublayer(const std::string& name);
  int64_t count_params() const;
  // The regularization penalties of every regularized trainable weight (empty when none).
  std::vector<Variable> regularization_losses() const;

  bool trainable() const { return trainable_; }
  virtual void set_trainable(bool trainable);

  // The position of a layer's own seed stream (Dropout and the augmentation layers with a seed:
  // their training calls so far). A training backup saves it, so a resumed run draws the same
  // masks as the run it continues (Keras 3 keeps it in a SeedGenerator variable). 0 and ignored
  // for layers without one.
  virtual uint64_t seed_calls() const { return 0; }
  virtual void set_seed_calls(uint64_t /*calls*/) {}
  // Keras's dtype_policy / variable_dtype / compute_dtype. Weights are created in
  // variable_dtype(); floating inputs are cast to compute_dtype() when the layer is called, and
  // layers read their weights through autocast(), which casts them to compute_dtype().
  const precision::DTypePolicy& dtype_policy() const { return policy_; }
  DType variable_dtype() const { return policy_.variable_dtype(); }
  DType compute_dtype() const { return policy_.compute_dtype(); }

  // Keras-like config: {"name", "trainable", "dtype" (the policy name), ...layer fields}.
  virtual nlohmann::json get_config() const;

  // Masking, as Keras's supports_masking and compute_mask. A mask rides on a Variable
  // (Variable::mask(): bool [batch, steps], true = a real step). operator() checks the first
  // input's mask against that input's leading axes and sets the output's: a layer that supports
  // masking gets compute_mask(inputs, mask) (by default the mask passed on unchanged; Embedding
  // with mask_zero and Masking make one, GlobalAveragePooling1D consumes it), unless its call()
  // already set one; a layer that does not drops it, with a warning printed once per layer, as
  // Keras warns. Layers that honour a mask (recurrent layers, attention, pooling) read it from
  // their inputs in call(); the loss and the metrics read it from the model's output.
  virtual bool supports_masking() const { return false; }
  virtual Tensor compute_mask(const std::vector<Variable>& inputs, const Tensor& mask) const;

 protected:
  virtual void build_impl(const std::vector<Shape>& input_shapes) {}
  virtual Variable call(const std::vector<Variable>& inputs, bool training) = 0;
  // call_multi()'s computation, num_outputs() tensors; the inputs are already cast. The default:
  // call()'s one output, and ValueError when given keyword tensors.
  virtual std::vector<Variable> call_with_args(const std::vector<Variable>& inputs,
                                               const CallArgs<Variable>& args, bool training);
  // The ValueError of a layer that takes no keyword tensors, unless there are none.
  void check_no_call_args(size_t initial_states) const;
  // Creates a weight at path()/name, initialized with a seed drawn from the global seed.
  Variable add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                      bool trainable = true, Regularizer regularizer = {});
  // Adds a weight holding `value` itself (any dtype: quant/ stores int8 kernels this way).
  Variable add_weight(const std::string& name, Tensor value, bool trainable);
  // ValueError "<name>: expected N input(s), received M" unless the count matches.
  void check_num_inputs(size_t received, size_t expected) const;
  // A weight as call() computes with it: the weight itself when it already has compute_dtype()
  // (or is not floating), else its cast. While gradients are recorded the cast is made once per
  // step and reused by every later use until backward frees its graph or the weight's value
  // changes (Variable::version()), so a layer applied N times in a step casts once; its gradient
  // flows back into the master weight in variable_dtype().
  Variable autocast(const Variable& weight);
  // Whether operator() casts floating inputs to compute_dtype(). Models say no: their layers
  // cast for themselves, so a float32 first layer sees the inputs as they are.
  virtual bool autocasts_inputs() const { return true; }
  // ValueError naming the layer, the input and the shapes unless every input's mask is bool with
  // that input's leading axes. operator() checks; layers with other entry points (attend()) too.
  void check_input_masks(const std::vector<Variable>& xs) const;

 private:
  std::string class_name_;
  std::string name_;
  std::string prefix_;
  bool trainable_ = true;
  bool built_ = false;
  precision::DTypePolicy policy_;
  std::vector<Shape> build_shapes_;
  std::vector<Weight> weights_;
  struct CastEntry {
    Variable master, cast;
    uint64_t version = 0;
  };
  std::vector<CastEntry> cast_cache_;  // autocast()'s copies of weights in compute_dtype()
  bool warned_mask_dropped_ = false;

  // operator()'s masking: the output's mask set (see supports_masking()).
  Variable with_output_mask(const std::vector<Variable>& xs, Variable out);
  // Whether operator() casts any of xs, and the inputs cast (masks kept).
  bool needs_input_cast(const std::vector<Variable>& xs) const;
  std::vector<Variable> cast_inputs(const std::vector<Variable>& xs) const;
};

// A layer with one input and one output.
class SingleInputLayer : public Layer {
 public:
  using Layer::Layer;

 protected:
  virtual void build_single(const Shape& input_shape) {}
  virtual Variable call_single(const Variable& x, bool training) = 0;

 private:
  void build_impl(const std::vector<Shape>& input_shapes) final;
  Variable call(const std::vector<Variable>& inputs, bool training) final;
};

// A shared handle to a concrete layer that can be called like one:
//   LayerRef<Dense> d = layers::Dense(10);  Variable y = d(x);  d->units();
template <class T>
class LayerRef {
 public:
  LayerRef() = default;
  explicit LayerRef(std::shared_ptr<T> p) : p_(std::move(p)) {}
  T* operator->() const { return p_.get(); }
  T& operator*() const { return *p_; }
  const std::shared_ptr<T>& ptr() const { return p_; }
  operator std::shared_ptr<Layer>() const { return p_; }  // NOLINT: Sequential({...}) takes these
  template <class... Args>
  auto operator()(Args&&... args) const {
    return (*p_)(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<T> p_;
};

template <class T, class... Args>
LayerRef<T> make_layer(Args&&... args) {
  return LayerRef<T>(std::make_shared<T>(std::forward<Args>(args)...));
}

// "BatchNormalization" -> "batch_normalization".
std::string to_snake_case(const std::string& class_name);

}  // namespace osprey::nn
