// HyperMLP: a prebuilt hypermodel, KerasTuner's HyperResNet idea for a multilayer perceptron:
// Flatten -> [Dense(units_i, relu) -> Dropout(dropout)] x num_layers -> Dense(num_classes,
// softmax), compiled with sparse_categorical_crossentropy and accuracy; the optimizer and its
// learning rate are hyperparameters too. Its defaults (what a search's first trial uses) are a
// sound Fashion-MNIST MLP: two layers of 256 units, dropout 0.2, adam at 1e-3.
//   tune::RandomSearch tuner(std::make_shared<tune::HyperMLP>(
//                                tune::HyperMLPOptions{.input_shape = {28, 28}, .num_classes =
//                                10}),
//                            {.objective = "val_accuracy", .max_trials = 10});
// `fixed` fixes or narrows hyperparameters (KerasTuner's hyperparameters= with
// tune_new_entries): a declaration in it (hp.Int("units_0", 64, 128), hp.Fixed("dropout", 0.0))
// replaces the built-in one, a bare value (hp.set("optimizer", "sgd")) fixes the hyperparameter
// at it; names the hypermodel does not read are refused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "osprey/tune/hypermodel.h"

namespace osprey::tune {

struct HyperMLPOptions {
  Shape input_shape{};  // one sample, without the batch axis: {28, 28} or {784}
  int num_classes = 0;  // at least 2
  std::optional<HyperParameters> fixed{};
};

class HyperMLP : public HyperModel {
 public:
  // ValueError for num_classes < 2, an empty input_shape or a `fixed` entry the model cannot use.
  explicit HyperMLP(HyperMLPOptions options);
  Model build(HyperParameters& hp) override;
  const HyperMLPOptions& options() const { return options_; }

 private:
  HyperMLPOptions options_;
};

namespace detail {

// What HyperMLP and HyperCNN share: their `fixed` option applied to each declaration, and the
// optimizer hyperparameters with the compile step.
class PrebuiltSpace {
 public:
  // `fixed` (may be null) must outlive this object.
  PrebuiltSpace(std::string owner, const HyperParameters* fixed)
      : owner_(std::move(owner)), fixed_(fixed) {}

  // Declares `builtin` in hp, or the declaration or value `fixed` gives for its name, and returns
  // its value. An override must give values of the built-in's kind (strings among the built-in's
  // values) within [lo, hi] (default: the built-in's range): ValueError naming it otherwise.
  Value declare(HyperParameters& hp, const HyperParameter& builtin) const;
  Value declare(HyperParameters& hp, const HyperParameter& builtin, double lo, double hi) const;
  // Opens a conditional scope on `parent` for those of `values` it can take; nullopt when it
  // can take none (the children are then never active, so they are not declared).
  std::optional<HyperParameters::ConditionalScope> scope(HyperParameters& hp,
                                                         const std::string& parent,
                                                         const std::vector<Value>& values) const;
  // ValueError when `fixed` names a hyperparameter that `all` (the space declared with nothing
  // fixed: every name the model reads) lacks.
  void check_names(const HyperParameters& all) const;
  const std::string& owner() const { return owner_; }

 private:
  std::string owner_;
  const HyperParameters* fixed_;
};

// HyperParameter::Int with linear sampling, the prebuilt spaces' usual declaration.
HyperParameter int_hp(const std::string& name, int64_t min, int64_t max,
                      std::optional<int64_t> step, int64_t default_value);

struct OptimizerValues {
  std::string optimizer;
  double learning_rate = 0;
};
// "optimizer" (adam, sgd, rmsprop; sgd with momentum 0.9, as plain SGD at these rates barely
// moves) and "learning_rate" (1e-4 to 1e-2, log sampling, default 1e-3).
OptimizerValues declare_optimizer(HyperParameters& hp, const PrebuiltSpace& space);
// The optimizer `o` names at its learning rate.
std::shared_ptr<optim::Optimizer> make_optimizer(const OptimizerValues& o);
// compile(make_optimizer(o), "sparse_categorical_crossentropy", {"accuracy"}).
void compile_classifier(Model& model, const OptimizerValues& o);

}  // namespace detail

}  // namespace osprey::tune
