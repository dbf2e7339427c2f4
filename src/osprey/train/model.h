// osprey::Model: what users hold. It is a handle to an architecture (models::Network: layers,
// weights, summary, saving) plus, after compile(), a Trainer (optimizer, loss, metrics and the
// fit/evaluate/predict loops). A Model is not a Trainer: compile() builds one and the model
// holds it, so the same architecture can be recompiled without touching its weights.
//   os::Model model = os::Sequential({os::layers::Dense(512, "relu"), os::layers::Dense(10)});
//   model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
//   auto history = model.fit(x, y, {.batch_size = 128, .epochs = 3, .validation_split = 0.1});
//   Tensor probs = model.predict(x_test);
// Copies of a Model share one architecture and one Trainer (like a Python reference).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "osprey/models/network.h"
#include "osprey/models/saving.h"
#include "osprey/quant/quantize.h"
#include "osprey/train/compile_options.h"
#include "osprey/train/fit_options.h"

namespace osprey::train {

class Trainer;

class Model {
 public:
  Model() = default;  // empty: assign a built model to it
  explicit Model(std::shared_ptr<models::Network> network);

  bool defined() const { return network_ != nullptr; }
  models::Network& network() const;
  const std::shared_ptr<models::Network>& network_ptr() const { return network_; }
  const std::string& name() const { return network().name(); }

  // Keras's compile: optimizer, loss and metrics by name or object. Under the mixed_float16 policy
  // the optimizer is wrapped in an optim::LossScaleOptimizer (unless it is one already or has a
  // fixed loss_scale_factor), as Keras does.
  void compile(OptimizerArg optimizer, LossArg loss, std::vector<MetricArg> metrics = {},
               CompileOptions options = {});
  bool compiled() const { return trainer_ != nullptr; }
  Trainer& trainer() const;  // ValueError "... call compile() first" when not compiled

  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  History fit(const data::Dataset& dataset, const FitOptions& options = {});
  Logs evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options = {});
  Logs evaluate(const data::Dataset& dataset, const EvaluateOptions& options = {});
  Tensor predict(const Tensor& x, const PredictOptions& options = {});
  Tensor predict(const data::Dataset& dataset, const PredictOptions& options = {});
  Logs train_on_batch(const Tensor& x, const Tensor& y);
  Logs test_on_batch(const Tensor& x, const Tensor& y);
  Tensor predict_on_batch(const Tensor& x);

  // Forward pass on Variables (custom training loops).
  autograd::Variable operator()(const autograd::Variable& x, bool training = false) const;

  std::vector<autograd::Variable> variables() const { return network().variables(); }
  std::vector<autograd::Variable> trainable_variables() const {
    return network().trainable_variables();
  }
  std::vector<Tensor> get_weights() const { return network().get_weights(); }
  void set_weights(const std::vector<Tensor>& w) const { network().set_weights(w); }
  std::shared_ptr<nn::Layer> get_layer(const std::string& name) const {
    return network().get_layer(name);
  }
  std::vector<std::shared_ptr<nn::Layer>> layers() const { return network().layers(); }
  int64_t count_params() const { return network().count_params(); }
  std::string summary() const { return network().summary(); }
  void build(const Shape& input_shape_without_batch) const;

  // Keras's model.quantize(mode) (quant/quantize.h); returns the quantized kernels' paths.
  // "int8": swaps the Dense layers for int8 ones, for inference: predict and evaluate work, fit
  // does not (int8 weights have no gradient); save() then stores int8 kernels with their scales.
  // "float8": swaps Dense and Conv2D for float8-training ones (emulated on CPU); fit trains
  // them, and save() stores their scales and amax histories with the float32 kernels.
  std::vector<std::string> quantize(const std::string& mode,
                                    const quant::QuantizeOptions& options = {}) const;

  // Writes DIR/config.json (architecture + compile config), DIR/model.safetensors (weights by
  // path) and, when compiled, DIR/optimizer.safetensors (iterations and slots), atomically.
  // In a multi-worker job only the chief's save reaches dir (chief_writes.h).
  void save(const std::string& dir) const;
  // The same with more in the folder: extra.config merged into config.json, extra.files beside
  // the weights (BackupAndRestore adds its training state this way).
  void save(const std::string& dir, const models::SaveExtras& extra) const;

  // Keras's load_weights for a folder save() wrote: every weight by path (an unbuilt model is
  // first built from the input shape config.json records). IoError naming the file and the
  // weight when one is missing or of another shape, or when an unbuilt model's shape is unknown.
  void load_weights(const std::string& dir) const;
  // The optimizer state save() wrote (iterations, slots, loss scale), so the next step is the
  // one the saved model would have taken; nothing when not compiled or the folder has none.
  // IoError naming optimizer.safetensors when it does not fit this optimizer.
  void load_optimizer_state(const std::string& dir) const;

  // Set by callbacks (EarlyStopping, TerminateOnNaN) to end fit after the current batch/epoch.
  bool& stop_training() { return *stop_training_; }

 private:
  std::shared_ptr<models::Network> network_;
  std::shared_ptr<Trainer> trainer_;
  std::shared_ptr<bool> stop_training_ = std::make_shared<bool>(false);
};

}  // namespace osprey::train

namespace osprey {
using Model = train::Model;
// Keras's constructors, returning the user handle.
Model Sequential(std::vector<std::shared_ptr<nn::Layer>> layers,
                 models::SequentialOptions options = {});
Model Functional(std::vector<nn::SymbolicTensor> inputs, std::vector<nn::SymbolicTensor> outputs,
                 const std::string& name = "");
inline Model Functional(nn::SymbolicTensor input, nn::SymbolicTensor output,
                        const std::string& name = "") {
  return Functional(std::vector{input}, std::vector{output}, name);
}
using nn::Input;
// Loads a directory written by Model::save: identical predictions, and, when it was compiled,
// the same optimizer state, so training resumes with the same next step.
Model load_model(const std::string& dir);
}  // namespace osprey
