#include "osprey/train/callbacks/early_stopping.h"

#include <fmt/format.h>

#include <cmath>

#include "osprey/train/model.h"

namespace osprey::train {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : o_(std::move(options)) {
  OSPREY_CHECK(o_.mode == "auto" || o_.mode == "min" || o_.mode == "max",
               "EarlyStopping: mode must be 'auto', 'min' or 'max'. Received: '{}'", o_.mode);
  OSPREY_CHECK(o_.patience >= 0, "EarlyStopping: patience must be non-negative. Received: {}",
               o_.patience);
  const bool accuracy_like =
      o_.monitor.find("acc") != std::string::npos || o_.monitor.find("auc") != std::string::npos;
  maximize_ = o_.mode == "max" || (o_.mode == "auto" && accuracy_like);
}

bool EarlyStopping::improved(double value, double reference) const {
  const double delta = std::abs(o_.min_delta);
  return maximize_ ? value - delta > reference : value + delta < reference;
}

void EarlyStopping::on_train_begin(const Logs&) {
  wait_ = 0;
  stopped_epoch_ = best_epoch_ = -1;
  best_ = o_.baseline ? *o_.baseline
                      : (maximize_ ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  const std::optional<double> value = logs.get(o_.monitor);
  OSPREY_CHECK(value.has_value(),
               "EarlyStopping: the monitored value '{}' is not in the logs ({}); "
               "pass validation data to monitor a val_ value",
               o_.monitor, logs.format());
  if (epoch < o_.start_from_epoch) return;
  ++wait_;
  if (improved(*value, best_)) {
    best_ = *value;
    best_epoch_ = epoch;
    if (o_.restore_best_weights) best_weights_ = model().get_weights();
    // Keras: a baseline must be beaten before the patience counter resets.
    if (!o_.baseline || improved(*value, *o_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= o_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model().stop_training() = true;
  }
}

void EarlyStopping::on_train_end(const Logs&) {
  if (o_.restore_best_weights && !best_weights_.empty() && stopped_epoch_ >= 0) {
    model().set_weights(best_weights_);
  }
}

void TerminateOnNaN::on_train_batch_end(int64_t batch, const Logs& logs) {
  const std::optional<double> loss = logs.get("loss");
  if (loss && !std::isfinite(*loss)) {
    fmt::print("Batch {}: invalid loss, terminating training\n", batch);
    model().stop_training() = true;
  }
}

}  // namespace osprey::train
