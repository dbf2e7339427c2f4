#include "osprey/losses/regression.h"

#include <cmath>

#include "osprey/losses/loss_op.h"

namespace osprey::losses {

namespace {
struct RegressionTerm {
  double value, derivative;
};

double sign(double e) { return e > 0.0 ? 1.0 : (e < 0.0 ? -1.0 : 0.0); }

template <class F>
Loss::Computed pointwise(const char* cls, const char* op, const Tensor& y_true,
                         const Variable& y_pred, F f) {
  detail::check_inputs(y_true, y_pred, cls);
  const Tensor t = detail::align_targets(y_true, y_pred.shape(), cls);
  return {detail::mean_over_last_axis(op, t, y_pred, f), {}};
}
}  // namespace

MeanSquaredError::MeanSquaredError(RegressionLossOptions o)
    : Loss("MeanSquaredError", o.name.empty() ? "mean_squared_error" : o.name, o.reduction) {}

Loss::Computed MeanSquaredError::compute(const Tensor& y_true, const Variable& y_pred) const {
  return pointwise("MeanSquaredError", "mean_squared_error", y_true, y_pred,
                   [](double t, double p) {
                     const double e = p - t;
                     return RegressionTerm{e * e, 2.0 * e};
                   });
}

MeanAbsoluteError::MeanAbsoluteError(RegressionLossOptions o)
    : Loss("MeanAbsoluteError", o.name.empty() ? "mean_absolute_error" : o.name, o.reduction) {}

Loss::Computed MeanAbsoluteError::compute(const Tensor& y_true, const Variable& y_pred) const {
  return pointwise("MeanAbsoluteError", "mean_absolute_error", y_true, y_pred,
                   [](double t, double p) {
                     const double e = p - t;
                     return RegressionTerm{std::fabs(e), sign(e)};
                   });
}

Huber::Huber(HuberOptions o)
    : Loss("Huber", o.name.empty() ? "huber_loss" : o.name, o.reduction), delta_(o.delta) {
  OSPREY_CHECK(delta_ > 0.0 && std::isfinite(delta_),
               "Huber: delta must be positive. Received: delta={}", delta_);
}

nlohmann::json Huber::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["delta"] = delta_;
  return c;
}

Loss::Computed Huber::compute(const Tensor& y_true, const Variable& y_pred) const {
  const double delta = delta_;
  return pointwise("Huber", "huber_loss", y_true, y_pred, [delta](double t, double p) {
    const double e = p - t, a = std::fabs(e);
    if (a <= delta) return RegressionTerm{0.5 * e * e, e};
    return RegressionTerm{delta * a - 0.5 * delta * delta, delta * sign(e)};
  });
}

}  // namespace osprey::losses
