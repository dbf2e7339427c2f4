// Weighted means: Mean (of given values, e.g. the loss of each batch) and MeanMetricWrapper, the
// base of every metric that is a mean of per-sample values (accuracies, MAE, MSE), as Keras's
// MeanMetricWrapper. Values [N, ...] reduce to one per sample (the mean of its values, each
// weighted when the weights have the values' shape); result = sum(w * v) / sum(w).
#pragma once

#include <string>
#include <vector>

#include "osprey/metrics/metric.h"

namespace osprey::metrics {

// The running sums behind every mean metric, in double.
class WeightedMean {
 public:
  // values: numel(shape) doubles laid out as shape [N, ...] (rank 0: one sample).
  void add(const double* values, const Shape& shape, const Tensor* sample_weight,
           const char* metric);
  void add(double value, double weight) {
    total_ += value * weight;
    count_ += weight;
  }
  // 0 before any update (Keras's divide_no_nan).
  double result() const noexcept { return count_ != 0.0 ? total_ / count_ : 0.0; }
  void reset() noexcept { total_ = count_ = 0.0; }
  double total() const noexcept { return total_; }
  double count() const noexcept { return count_; }
  std::vector<double> values() const { return {total_, count_}; }
  // {total, count}, as values() gave them; ValueError naming `metric` otherwise.
  void load(const std::vector<double>& values, const std::string& metric);

 private:
  double total_ = 0.0, count_ = 0.0;
};

// The weighted mean of values.
//   Mean m("loss");
//   m.update_state(0.9, 128);  m.update_state(0.6, 64);   // batches of 128 and 64
//   m.result() == (0.9 * 128 + 0.6 * 64) / 192
class Mean : public Metric {
 public:
  explicit Mean(std::string name = "mean") : Metric("Mean", std::move(name)) {}
  void update_state(double value, double weight = 1.0) { mean_.add(value, weight); }
  // Every value [N, ...] of a tensor; sample_weight as in Metric.
  void update_state(const Tensor& values, const Tensor* sample_weight = nullptr);
  // The common metric signature averages y_pred (y_true is ignored), so a trainer can treat a
  // Mean like any other metric.
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const Tensor* sample_weight = nullptr) override;
  double result() const override { return mean_.result(); }
  void reset_state() override { mean_.reset(); }
  const WeightedMean& state() const noexcept { return mean_; }
  std::vector<double> state_values() const override { return mean_.values(); }
  void load_state_values(const std::vector<double>& values) override { mean_.load(values, name()); }

 private:
  WeightedMean mean_;
  std::vector<double> buffer_;
};

// A mean of per-sample values that a subclass computes from (y_true, y_pred).
class MeanMetricWrapper : public Metric {
 public:
  using Metric::Metric;
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const Tensor* sample_weight = nullptr) final;
  double result() const override { return mean_.result(); }
  void reset_state() override { mean_.reset(); }
  const WeightedMean& state() const noexcept { return mean_; }
  std::vector<double> state_values() const override { return mean_.values(); }
  void load_state_values(const std::vector<double>& values) override { mean_.load(values, name()); }

 protected:
  // Fills values (resized by the callee) and returns their shape [N, ...].
  virtual Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                               std::vector<double>& values) const = 0;

 private:
  WeightedMean mean_;
  std::vector<double> values_;  // reused across batches: no allocation once warm
};

}  // namespace osprey::metrics
