// HyperModel: what a tuner tunes — build(hp) returns a compiled model for the values in hp, and
// fit(hp, model, data, options) trains it (override it to tune fit's own arguments, batch size
// or epochs, as KerasTuner's HyperModel.fit). A plain build function is wrapped in one.
//   struct SimpleMLP : tune::HyperModel {
//     int num_classes;
//     Model build(tune::HyperParameters& hp) override { ... }
//   };
// TrainData is the data a search was given, tensors or a dataset, passed through to fit.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

#include "osprey/train/model.h"
#include "osprey/tune/hyperparameters.h"

namespace osprey::tune {

struct TrainData {
  Tensor x, y;
  std::optional<data::Dataset> dataset{};
  train::History fit(Model& model, const train::FitOptions& options) const;
};

class HyperModel {
 public:
  virtual ~HyperModel() = default;
  virtual Model build(HyperParameters& hp) = 0;
  virtual train::History fit(HyperParameters& hp, Model& model, const TrainData& data,
                             const train::FitOptions& options) {
    return data.fit(model, options);
  }
};

using BuildFn = std::function<Model(HyperParameters&)>;

class FunctionHyperModel : public HyperModel {
 public:
  explicit FunctionHyperModel(BuildFn fn) : fn_(std::move(fn)) {}
  Model build(HyperParameters& hp) override { return fn_(hp); }

 private:
  BuildFn fn_;
};

// What tuner constructors take: a build function (any callable Model(HyperParameters&)) or a
// HyperModel.
struct HyperModelArg {
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<Model, F&, HyperParameters&>>>
  HyperModelArg(F fn)
      : model(std::make_shared<FunctionHyperModel>(BuildFn(std::move(fn)))) {}  // NOLINT
  template <class H, class = std::enable_if_t<std::is_base_of_v<HyperModel, H>>>
  HyperModelArg(std::shared_ptr<H> h) : model(std::move(h)) {}  // NOLINT
  std::shared_ptr<HyperModel> model;
};

}  // namespace osprey::tune
