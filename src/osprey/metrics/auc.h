// AUC: the area under the ROC curve, estimated as Keras's keras.metrics.AUC does. Predictions are
// bucketed against num_thresholds thresholds ({-1e-7, 1/(T-1), ..., (T-2)/(T-1), 1 + 1e-7}: a
// prediction is positive at a threshold when it is strictly greater); the state is the weighted
// count of positives and negatives per bucket, so an update is one pass and the confusion matrix
// at every threshold is a suffix sum. result() sums (FPR[i] - FPR[i+1]) * height(TPR[i], TPR[i+1])
// over the thresholds; height is the trapezoid mean ("interpolation", Keras's default), the
// minimum ("minoring") or the maximum ("majoring"). With at most one distinct prediction value per
// bucket this is the exact AUC (the Mann-Whitney statistic, ties counted 1/2).
// Predictions are expected in [0, 1] (from_logits applies a sigmoid first); values below count as
// 0, above as beyond every threshold. Labels are read as numbers: 1 positive, 0 negative (soft
// labels count fractionally, as in Keras). y_true and y_pred are flattened (multi_label = false).
#pragma once

#include <string>
#include <vector>

#include "osprey/metrics/metric.h"

namespace osprey::metrics {

struct AUCOptions {
  int num_thresholds = 200;
  std::string curve = "ROC";                       // "PR" is not implemented yet
  std::string summation_method = "interpolation";  // or "minoring", "majoring"
  bool from_logits = false;
  std::string name = "auc";
};

//   AUC auc;
//   auc.update_state(labels01, probs);   // any shapes with the same number of elements
//   double area = auc.result();
class AUC : public Metric {
 public:
  explicit AUC(AUCOptions options = {});
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const Tensor* sample_weight = nullptr) override;
  double result() const override;
  void reset_state() override;
  // The label mass per bucket: positives then negatives.
  std::vector<double> state_values() const override;
  void load_state_values(const std::vector<double>& values) override;
  nlohmann::json get_config() const override;

  const std::vector<double>& thresholds() const noexcept { return thresholds_; }
  // The weighted confusion counts at every threshold (suffix sums of the bucket counts).
  std::vector<double> true_positives() const;
  std::vector<double> false_positives() const;
  std::vector<double> true_negatives() const;
  std::vector<double> false_negatives() const;

 private:
  enum class Summation { interpolation, minoring, majoring };
  AUCOptions options_;
  Summation summation_;
  std::vector<double> thresholds_;
  std::vector<double> positives_, negatives_;  // weighted label mass per bucket
  std::vector<double> scratch_;  // per-update histograms (kept: no allocation once warm)
};

}  // namespace osprey::metrics
