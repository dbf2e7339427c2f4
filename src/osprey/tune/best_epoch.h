// The seeds' last step of a search (listing 18.3 and after): before retraining the best
// hyperparameters on train + validation data, find how many epochs they need — train on the
// training split with EarlyStopping (high patience) on the validation split and take the best
// epoch — then train a fresh model on all the data for best_epoch x 1.2 epochs (20% more data,
// a little longer).
//   int epochs = tune::get_best_epoch(hypermodel, hp, x_train, y_train, x_val, y_val);
//   Model final = tune::get_best_trained_model(hypermodel, hp, x_train, y_train, x_val, y_val);
#pragma once

#include <string>

#include "osprey/tune/hypermodel.h"

namespace osprey::tune {

struct BestEpochOptions {
  std::string monitor = "val_loss";
  std::string mode = "auto";  // min / max / auto (as EarlyStopping)
  int max_epochs = 100;
  int patience = 10;
  double factor = 1.2;      // retraining epochs = int(best_epoch * factor), at least 1
  train::FitOptions fit{};  // batch size, verbosity, seed... (epochs and validation are set here)
};

// The 1-based epoch with the best monitored value.
int get_best_epoch(HyperModel& hypermodel, const HyperParameters& hp, const Tensor& x_train,
                   const Tensor& y_train, const Tensor& x_val, const Tensor& y_val,
                   const BestEpochOptions& options = {});
// A model built from hp and trained on train + validation for int(best_epoch * factor) epochs.
Model get_best_trained_model(HyperModel& hypermodel, const HyperParameters& hp,
                             const Tensor& x_train, const Tensor& y_train, const Tensor& x_val,
                             const Tensor& y_val, const BestEpochOptions& options = {});

}  // namespace osprey::tune
