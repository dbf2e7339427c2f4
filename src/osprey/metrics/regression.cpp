#include "osprey/metrics/regression.h"

#include <cmath>

#include "osprey/metrics/metric_inputs.h"

namespace osprey::metrics {

namespace {
// values[i] = mean_j err(y_pred[i, j] - y_true[i, j]) over the last axis; returns the sample shape.
template <class Err>
Shape row_means(const Tensor& y_true, const Tensor& y_pred, const char* metric,
                std::vector<double>& values, Err err) {
  const Tensor t = detail::host_numbers(detail::align_targets(y_true, y_pred.shape(), metric));
  const Tensor p = detail::host_numbers(y_pred);
  Shape lead = y_pred.shape();
  int64_t cols = 1;
  if (lead.ndim() >= 2) {
    cols = lead[lead.ndim() - 1];
    lead.erase(lead.ndim() - 1);
  }
  const int64_t rows = lead.numel();
  values.resize(static_cast<size_t>(rows));
  if (cols == 0) return Shape{0};
  const double inv = 1.0 / static_cast<double>(cols);
  detail::visit_numbers(t, [&](const auto* tp) {
    detail::visit_numbers(p, [&](const auto* pp) {
      for (int64_t i = 0; i < rows; ++i) {
        double s = 0.0;
        for (int64_t k = i * cols; k < (i + 1) * cols; ++k)
          s += err(static_cast<double>(pp[k]) - static_cast<double>(tp[k]));
        values[static_cast<size_t>(i)] = s * inv;
      }
    });
  });
  return lead;
}
}  // namespace

Shape MeanAbsoluteError::compute_values(const Tensor& y_true, const Tensor& y_pred,
                                        std::vector<double>& values) const {
  return row_means(y_true, y_pred, class_name(), values, [](double e) { return std::fabs(e); });
}

Shape MeanSquaredError::compute_values(const Tensor& y_true, const Tensor& y_pred,
                                       std::vector<double>& values) const {
  return row_means(y_true, y_pred, class_name(), values, [](double e) { return e * e; });
}

}  // namespace osprey::metrics
