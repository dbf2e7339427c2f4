#include "osprey/metrics/registry.h"

#include <fmt/format.h>

#include <utility>

#include "osprey/metrics/accuracy.h"
#include "osprey/metrics/auc.h"
#include "osprey/metrics/regression.h"
#include "osprey/metrics/top_k.h"

namespace osprey::metrics {

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = {"accuracy",
                                                 "acc",
                                                 "sparse_categorical_accuracy",
                                                 "categorical_accuracy",
                                                 "binary_accuracy",
                                                 "top_k_categorical_accuracy",
                                                 "sparse_top_k_categorical_accuracy",
                                                 "mean_absolute_error",
                                                 "mae",
                                                 "mean_squared_error",
                                                 "mse",
                                                 "auc"};
  return names;
}

std::string accuracy_for_loss(std::string_view loss) {
  if (loss == "binary_crossentropy" || loss == "BinaryCrossentropy") return "binary_accuracy";
  if (loss == "sparse_categorical_crossentropy" || loss == "SparseCategoricalCrossentropy") {
    return "sparse_categorical_accuracy";
  }
  if (loss == "categorical_crossentropy" || loss == "CategoricalCrossentropy")
    return "categorical_accuracy";
  return "";
}

std::string accuracy_for_shapes(const Shape& y_true, const Shape& y_pred) {
  if (y_pred.ndim() <= 1 || y_pred[y_pred.ndim() - 1] == 1) return "binary_accuracy";
  const int64_t t_last = y_true.ndim() > 0 ? y_true[y_true.ndim() - 1] : 1;
  if (y_true.ndim() < y_pred.ndim() || t_last == 1) return "sparse_categorical_accuracy";
  return "categorical_accuracy";
}

std::unique_ptr<Metric> make_accuracy(std::string_view which, std::string name) {
  if (which == "binary_accuracy") return std::make_unique<BinaryAccuracy>(0.5, std::move(name));
  if (which == "sparse_categorical_accuracy")
    return std::make_unique<SparseCategoricalAccuracy>(std::move(name));
  if (which == "categorical_accuracy")
    return std::make_unique<CategoricalAccuracy>(std::move(name));
  OSPREY_THROW(ValueError,
               "make_accuracy: expected binary_accuracy, sparse_categorical_accuracy or "
               "categorical_accuracy. "
               "Received: '{}'",
               which);
}

void InferredAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred,
                                    const Tensor* sample_weight) {
  if (!inner_) {
    inner_ = make_accuracy(accuracy_for_shapes(y_true.shape(), y_pred.shape()), name());
    if (!pending_.empty()) inner_->load_state_values(std::exchange(pending_, {}));
  }
  inner_->update_state(y_true, y_pred, sample_weight);
}

void InferredAccuracy::load_state_values(const std::vector<double>& values) {
  if (inner_) {
    inner_->load_state_values(values);
  } else {
    pending_ = values;
  }
}

std::unique_ptr<Metric> get(std::string_view name, std::string_view loss_name) {
  std::string n(name);
  if (name == "accuracy" || name == "acc") {
    const std::string which = accuracy_for_loss(loss_name);
    if (which.empty()) return std::make_unique<InferredAccuracy>(n);
    return make_accuracy(which, n);
  }
  if (name == "sparse_categorical_accuracy" || name == "categorical_accuracy" ||
      name == "binary_accuracy") {
    return make_accuracy(name, n);
  }
  if (name == "top_k_categorical_accuracy") return std::make_unique<TopKCategoricalAccuracy>(5, n);
  if (name == "sparse_top_k_categorical_accuracy")
    return std::make_unique<SparseTopKCategoricalAccuracy>(5, n);
  if (name == "mae" || name == "mean_absolute_error") return std::make_unique<MeanAbsoluteError>(n);
  if (name == "mse" || name == "mean_squared_error") return std::make_unique<MeanSquaredError>(n);
  if (name == "auc") return std::make_unique<AUC>(AUCOptions{.name = n});
  OSPREY_THROW(ValueError, "Unknown metric: '{}'. Valid names: {}", name,
               fmt::join(metric_names(), ", "));
}

}  // namespace osprey::metrics
