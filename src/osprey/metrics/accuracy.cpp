#include "osprey/metrics/accuracy.h"

#include "osprey/metrics/metric_inputs.h"

namespace osprey::metrics {

namespace {
// values[k] = fn(t[k], p[k]) over y_true aligned with y_pred; returns y_pred's shape.
template <class Fn>
Shape elementwise(const Tensor& y_true, const Tensor& y_pred, const char* metric,
                  std::vector<double>& values, Fn fn) {
  const Tensor t = detail::host_numbers(detail::align_targets(y_true, y_pred.shape(), metric));
  const Tensor p = detail::host_numbers(y_pred);
  values.resize(static_cast<size_t>(p.numel()));
  double* out = values.data();
  detail::visit_numbers(t, [&](const auto* tp) {
    detail::visit_numbers(p, [&](const auto* pp) {
      for (int64_t k = 0; k < p.numel(); ++k)
        out[k] = fn(static_cast<double>(tp[k]), static_cast<double>(pp[k]));
    });
  });
  return y_pred.shape();
}
}  // namespace

Shape Accuracy::compute_values(const Tensor& y_true, const Tensor& y_pred,
                               std::vector<double>& values) const {
  return elementwise(y_true, y_pred, class_name(), values,
                     [](double t, double p) { return t == p ? 1.0 : 0.0; });
}

Shape BinaryAccuracy::compute_values(const Tensor& y_true, const Tensor& y_pred,
                                     std::vector<double>& values) const {
  // Compared in y_pred's precision, as Keras casts the threshold to y_pred's dtype.
  const double th = y_pred.dtype() == DType::float64
                        ? threshold_
                        : static_cast<double>(static_cast<float>(threshold_));
  return elementwise(y_true, y_pred, class_name(), values,
                     [th](double t, double p) { return (p > th ? 1.0 : 0.0) == t ? 1.0 : 0.0; });
}

nlohmann::json BinaryAccuracy::get_config() const {
  nlohmann::json c = MeanMetricWrapper::get_config();
  c["threshold"] = threshold_;
  return c;
}

Shape CategoricalAccuracy::compute_values(const Tensor& y_true, const Tensor& y_pred,
                                          std::vector<double>& values) const {
  return detail::score_dense_rows(
      y_true, y_pred, class_name(), values, [](const auto* t, const auto* p, int64_t classes) {
        return detail::argmax(t, classes) == detail::argmax(p, classes) ? 1.0 : 0.0;
      });
}

Shape SparseCategoricalAccuracy::compute_values(const Tensor& y_true, const Tensor& y_pred,
                                                std::vector<double>& values) const {
  return detail::score_sparse_rows(
      y_true, y_pred, class_name(), values, [](double label, const auto* p, int64_t classes) {
        return static_cast<double>(detail::argmax(p, classes)) == label ? 1.0 : 0.0;
      });
}

}  // namespace osprey::metrics
