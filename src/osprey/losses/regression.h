// Regression losses: MeanSquaredError, MeanAbsoluteError and Huber. Each averages an elementwise
// error over the last axis (Keras: y [N, D] -> losses [N]; a rank-1 y [N] counts as [N, 1], so
// "sum" and sample weights act per sample) in one fused loop whose backward is one multiply.
// y_true may have a trailing size-1 axis that y_pred lacks, or the reverse (Keras squeezes it).
#pragma once

#include <string>

#include "osprey/losses/loss.h"

namespace osprey::losses {

struct RegressionLossOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name{};  // default: the Keras name of the loss
};

// mean((y_pred - y_true)^2). The gradient is 2 (y_pred - y_true) / D.
//   MeanSquaredError mse;  Variable l = mse(y, model(x));
class MeanSquaredError : public Loss {
 public:
  explicit MeanSquaredError(RegressionLossOptions options = {});

 protected:
  Computed compute(const Tensor& y_true, const Variable& y_pred) const override;
};

// mean(|y_pred - y_true|). The gradient at a zero error is 0 (sign(0), as TF and PyTorch).
class MeanAbsoluteError : public Loss {
 public:
  explicit MeanAbsoluteError(RegressionLossOptions options = {});

 protected:
  Computed compute(const Tensor& y_true, const Variable& y_pred) const override;
};

struct HuberOptions {
  double delta = 1.0;  // where the loss turns from quadratic to linear; must be positive
  std::string reduction = "sum_over_batch_size";
  std::string name{};  // default "huber_loss"
};

// 0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta), e = y_pred - y_true; averaged.
//   Huber huber({.delta = 2.0});
class Huber : public Loss {
 public:
  explicit Huber(HuberOptions options = {});
  nlohmann::json get_config() const override;
  double delta() const noexcept { return delta_; }

 protected:
  Computed compute(const Tensor& y_true, const Variable& y_pred) const override;

 private:
  double delta_;
};

}  // namespace osprey::losses
