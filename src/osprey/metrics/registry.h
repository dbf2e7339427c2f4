// Metrics by name, as model.compile(..., {"accuracy", "auc"}) spells them, including Keras's
// resolution of "accuracy"/"acc" into the binary, sparse categorical or categorical accuracy.
//   auto acc = metrics::get("accuracy", "sparse_categorical_crossentropy");  // sparse, named
//   "accuracy" auto inferred = metrics::get("acc");       // decided by the shapes of its first
//   batch
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/metrics/metric.h"

namespace osprey::metrics {

// "accuracy" / "acc", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy",
// "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "mae" /
// "mean_absolute_error", "mse" / "mean_squared_error", "auc", with default options. The
// metric's name() is the name asked for (Keras: it becomes the History key). loss_name (a loss's
// Keras or class name) picks the accuracy for "accuracy"; without one that decides it, the
// accuracy is inferred from the first batch's shapes. Unknown names throw ValueError listing the
// valid ones.
std::unique_ptr<Metric> get(std::string_view name, std::string_view loss_name = "");
const std::vector<std::string>& metric_names();

// The accuracy a loss implies: "binary_accuracy" for binary_crossentropy,
// "sparse_categorical_accuracy" / "categorical_accuracy" for the categorical cross-entropies,
// "" for losses that do not decide (regression losses, unknown names).
std::string accuracy_for_loss(std::string_view loss_name);
// Keras 3's rule from shapes: y_pred's last axis of size 1 (or a rank-1 y_pred, which Keras would
// call categorical) -> binary; y_true of lower rank, or a last axis of size 1 against several
// classes -> sparse categorical; otherwise categorical.
std::string accuracy_for_shapes(const Shape& y_true, const Shape& y_pred);
// The accuracy metric of that name ("binary_accuracy", ...), named `name`.
std::unique_ptr<Metric> make_accuracy(std::string_view which, std::string name);

// "accuracy" whose kind is decided by accuracy_for_shapes on the first update_state; result()
// is 0 until then. reset_state keeps the decision, as Keras does.
class InferredAccuracy : public Metric {
 public:
  explicit InferredAccuracy(std::string name = "accuracy")
      : Metric("InferredAccuracy", std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const Tensor* sample_weight = nullptr) override;
  double result() const override { return inner_ ? inner_->result() : 0.0; }
  void reset_state() override {
    if (inner_) inner_->reset_state();
  }
  // The metric it resolved to, or null before the first batch.
  const Metric* resolved() const noexcept { return inner_.get(); }
  // The resolved metric's state; loaded before the first batch, it waits for the resolution.
  std::vector<double> state_values() const override {
    return inner_ ? inner_->state_values() : pending_;
  }
  void load_state_values(const std::vector<double>& values) override;

 private:
  std::unique_ptr<Metric> inner_;
  std::vector<double> pending_;  // state loaded before the kind was known
};

}  // namespace osprey::metrics
