// Regression metrics: MeanAbsoluteError and MeanSquaredError, the running mean over samples of
// mean(|y_pred - y_true|) and mean((y_pred - y_true)^2) over each sample's last axis (Keras's
// MeanMetricWrapper of the loss functions). A rank-1 y [N] is one value per sample, so batches are
// weighted by their size (Keras would average such a batch into one value first).
#pragma once

#include <string>

#include "osprey/metrics/mean.h"

namespace osprey::metrics {

//   MeanAbsoluteError mae;  mae.update_state(y, pred);  mae.result();
class MeanAbsoluteError : public MeanMetricWrapper {
 public:
  explicit MeanAbsoluteError(std::string name = "mean_absolute_error")
      : MeanMetricWrapper("MeanAbsoluteError", std::move(name)) {}

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;
};

class MeanSquaredError : public MeanMetricWrapper {
 public:
  explicit MeanSquaredError(std::string name = "mean_squared_error")
      : MeanMetricWrapper("MeanSquaredError", std::move(name)) {}

 protected:
  Shape compute_values(const Tensor& y_true, const Tensor& y_pred,
                       std::vector<double>& values) const override;
};

}  // namespace osprey::metrics
