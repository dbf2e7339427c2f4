// Metric: the base of every stateful metric (Keras's keras.metrics.Metric). A metric accumulates
// over batches with update_state, reports with result() and starts over with reset_state().
// State is kept in double whatever the compute dtype, and updates are tight loops over host
// arrays (metrics run every batch), never chains of tensor ops.
// Concrete metrics: mean.h, accuracy.h, top_k.h, regression.h, auc.h, perplexity.h; by name:
// registry.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/tensor/tensor.h"

namespace osprey::metrics {

// Usage:
//   metrics::SparseCategoricalAccuracy acc;
//   for (auto& [x, y] : batches) acc.update_state(y, model(x));   // labels [N], probs [N, C]
//   double a = acc.result();                                       // over every batch so far
//   acc.reset_state();                                             // at the next epoch
//   metrics::Mean loss_tracker("loss");
//   loss_tracker.update_state(loss.item(), batch_size);            // weighted by batch size
//   auto m = metrics::get("accuracy", "sparse_categorical_crossentropy");  // registry.h
// y_true and y_pred are plain tensors (detach Variables with .value()); sample_weight, when
// given, weighs each sample (or each value, when it has the values' shape).
class Metric {
 public:
  // class_name: a string literal, the Keras class name; name: the metric's name, a History key.
  Metric(const char* class_name, std::string name)
      : class_name_(class_name), name_(std::move(name)) {}
  virtual ~Metric() = default;

  virtual void update_state(const Tensor& y_true, const Tensor& y_pred,
                            const Tensor* sample_weight = nullptr) = 0;
  virtual double result() const = 0;
  virtual void reset_state() = 0;

  const std::string& name() const noexcept { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const char* class_name() const noexcept { return class_name_; }
  // The running state as numbers, and back: a training backup saves it mid-epoch, so the resumed
  // epoch reports what the uninterrupted one would. The default (a metric that does not say)
  // saves nothing; loading anything into it is a ValueError naming the metric.
  virtual std::vector<double> state_values() const { return {}; }
  virtual void load_state_values(const std::vector<double>& values) {
    OSPREY_CHECK(values.empty(),
                 "{} ({}): cannot load a saved state of {} values: the metric keeps no state "
                 "it can save",
                 name_, class_name_, values.size());
  }

  // Keras's config: {"name", "dtype": "float32"} plus each metric's own fields.
  virtual nlohmann::json get_config() const { return {{"name", name_}, {"dtype", "float32"}}; }

 private:
  const char* class_name_;
  std::string name_;
};

}  // namespace osprey::metrics
