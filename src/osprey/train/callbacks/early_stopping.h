// EarlyStopping: stops fit when a monitored value stops improving, as Keras's callback: after
// `patience` epochs without an improvement larger than min_delta, optionally restoring the
// weights of the best epoch.
//   model.fit(x, y, {.epochs = 100, .validation_split = 0.1,
//                    .callbacks = {os::callbacks::EarlyStopping({.patience = 5})}});
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/tensor/tensor.h"
#include "osprey/train/callback.h"

namespace osprey::train {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 0;
  std::string mode = "auto";  // "min", "max", or "auto": max for accuracy/auc-like names, else min
  std::optional<double> baseline{};
  bool restore_best_weights = false;
  int start_from_epoch = 0;
};

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  std::shared_ptr<Callback> clone() const override { return std::make_shared<EarlyStopping>(o_); }
  int stopped_epoch() const { return stopped_epoch_; }  // -1 when training ran to the end
  int best_epoch() const { return best_epoch_; }

 private:
  bool improved(double value, double reference) const;
  EarlyStoppingOptions o_;
  bool maximize_ = false;
  double best_ = 0.0;
  int wait_ = 0, stopped_epoch_ = -1, best_epoch_ = -1;
  std::vector<Tensor> best_weights_;
};

// Stops training as soon as the loss of a batch is NaN or infinite.
class TerminateOnNaN : public Callback {
 public:
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  std::shared_ptr<Callback> clone() const override { return std::make_shared<TerminateOnNaN>(); }
};

}  // namespace osprey::train

// Keras's spellings (keras.callbacks.EarlyStopping): each returns the callback, ready for
// FitOptions::callbacks, as its own type so stopped_epoch() and best_epoch() stay reachable.
namespace osprey::callbacks {
inline std::shared_ptr<train::EarlyStopping> EarlyStopping(
    train::EarlyStoppingOptions options = {}) {
  return std::make_shared<train::EarlyStopping>(std::move(options));
}
inline std::shared_ptr<train::TerminateOnNaN> TerminateOnNaN() {
  return std::make_shared<train::TerminateOnNaN>();
}
}  // namespace osprey::callbacks
