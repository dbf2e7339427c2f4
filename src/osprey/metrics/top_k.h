// Top-k accuracies: whether the target class is among the k highest scores of y_pred [..., C].
// Ties follow tf.math.in_top_k (Keras's semantics): the target counts as in the top k when fewer
// than k classes score strictly higher than it, so classes tied at the boundary are all "in" —
// with k = 1 a row of equal scores is a hit for every target, unlike argmax accuracy. A NaN score
// at the target is never in the top k; k >= C makes every finite target a hit. A target outside
// [0, C) (or not an integer) is a miss.
#pragma once

#include <string>

#include "osprey/metrics/mean.h"

namespace osprey::metrics {

// y_true one-hot [..., C]; the target is argmax(y_true) (first index on ties).
//   TopKCategoricalAccuracy top5;  top5.update_state(one_hot, probs);
class TopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy");
  int k() const noexcept { return k_; }
  nlohmann::json get_config() const override;

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;

 private:
  int k_;
};

// y_true class indices [...] or [..., 1].
//   SparseTopKCategoricalAccuracy top3(3);  top3.update_state(labels, logits);
class SparseTopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseTopKCategoricalAccuracy(int k = 5,
                                         std::string name = "sparse_top_k_categorical_accuracy");
  int k() const noexcept { return k_; }
  nlohmann::json get_config() const override;

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;

 private:
  int k_;
};

}  // namespace osprey::metrics
