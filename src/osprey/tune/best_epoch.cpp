#include "osprey/tune/best_epoch.h"

#include <algorithm>
#include <cmath>

#include "osprey/core/error.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/callbacks/early_stopping.h"
#include "osprey/tune/objective.h"

namespace osprey::tune {

int get_best_epoch(HyperModel& hypermodel, const HyperParameters& hp, const Tensor& x_train,
                   const Tensor& y_train, const Tensor& x_val, const Tensor& y_val,
                   const BestEpochOptions& o) {
  OSPREY_CHECK(o.max_epochs >= 1, "get_best_epoch: max_epochs must be >= 1. Received: {}",
               o.max_epochs);
  HyperParameters values = hp;
  Model model = hypermodel.build(values);
  train::FitOptions fo = o.fit;
  fo.epochs = o.max_epochs;
  fo.initial_epoch = 0;
  fo.validation_split = 0;
  fo.validation_data = train::ValidationData(x_val, y_val);
  fo.callbacks.push_back(std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.monitor = o.monitor, .patience = o.patience, .mode = o.mode}));
  const train::History history =
      hypermodel.fit(values, model, TrainData{x_train, y_train, std::nullopt}, fo);
  auto it = history.history.find(o.monitor);
  OSPREY_CHECK(it != history.history.end() && !it->second.empty(),
               "get_best_epoch: '{}' is not in the training history", o.monitor);
  const bool maximize = o.mode == "max" || (o.mode == "auto" && Objective(o.monitor).maximize());
  size_t best = 0;
  for (size_t i = 1; i < it->second.size(); ++i) {
    const double v = it->second[i];
    if (std::isfinite(v) && (maximize ? v > it->second[best] : v < it->second[best])) best = i;
  }
  return static_cast<int>(best) + 1;
}

Model get_best_trained_model(HyperModel& hypermodel, const HyperParameters& hp,
                             const Tensor& x_train, const Tensor& y_train, const Tensor& x_val,
                             const Tensor& y_val, const BestEpochOptions& o) {
  const int best_epoch = get_best_epoch(hypermodel, hp, x_train, y_train, x_val, y_val, o);
  HyperParameters values = hp;
  Model model = hypermodel.build(values);
  train::FitOptions fo = o.fit;
  fo.epochs = std::max(1, static_cast<int>(best_epoch * o.factor));
  fo.initial_epoch = 0;
  fo.validation_split = 0;
  fo.validation_data.reset();
  hypermodel.fit(values, model,
                 TrainData{concat({x_train, x_val}, 0), concat({y_train, y_val}, 0), std::nullopt},
                 fo);
  return model;
}

}  // namespace osprey::tune
