// Accuracy metrics, each the mean of a per-sample 0/1 value (mean.h):
//   Accuracy                   y_pred == y_true exactly, elementwise
//   BinaryAccuracy             (y_pred > threshold) == y_true, elementwise
//   CategoricalAccuracy        argmax(y_pred) == argmax(y_true), y_true one-hot [..., C]
//   SparseCategoricalAccuracy  argmax(y_pred) == y_true, y_true class indices [...] or [..., 1]
// argmax ties go to the first index (as tf.argmax), so a row of equal scores counts as class 0.
// Elementwise values average over each sample's values (Keras 3); a rank-1 y [N] is one value per
// sample. Labels may be any dtype; they are compared as numbers, so a label outside [0, C) or a
// non-integer label simply never matches.
#pragma once

#include <string>

#include "osprey/metrics/mean.h"

namespace osprey::metrics {

//   Accuracy acc;  acc.update_state(from_vector<int64_t>({1, 2}), from_vector<int64_t>({1, 3})); //
//   0.5
class Accuracy : public MeanMetricWrapper {
 public:
  explicit Accuracy(std::string name = "accuracy")
      : MeanMetricWrapper("Accuracy", std::move(name)) {}

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;
};

//   BinaryAccuracy acc(0.5);  acc.update_state(labels01, sigmoid_probs);
class BinaryAccuracy : public MeanMetricWrapper {
 public:
  explicit BinaryAccuracy(double threshold = 0.5, std::string name = "binary_accuracy")
      : MeanMetricWrapper("BinaryAccuracy", std::move(name)), threshold_(threshold) {}
  double threshold() const noexcept { return threshold_; }
  nlohmann::json get_config() const override;

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;

 private:
  double threshold_;
};

class CategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy")
      : MeanMetricWrapper("CategoricalAccuracy", std::move(name)) {}

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;
};

//   SparseCategoricalAccuracy acc;  acc.update_state(labels /* int64 [N] */, probs /* [N, C] */);
class SparseCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy")
      : MeanMetricWrapper("SparseCategoricalAccuracy", std::move(name)) {}

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;
};

}  // namespace osprey::metrics
