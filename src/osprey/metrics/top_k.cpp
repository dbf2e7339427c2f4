#include "osprey/metrics/top_k.h"

#include <cmath>

#include "osprey/metrics/metric_inputs.h"

namespace osprey::metrics {

namespace {

// in_top_k: fewer than k scores strictly above the target's. One pass over the row, no sort.
template <class T>
bool in_top_k(const T* row, int64_t classes, double target, int k) {
  if (!(target >= 0.0 && target < static_cast<double>(classes)) || target != std::floor(target))
    return false;
  const T v = row[static_cast<int64_t>(target)];
  if (detail::is_nan(v)) return false;
  int64_t above = 0;
  for (int64_t c = 0; c < classes; ++c) above += row[c] > v;
  return above < k;
}

int checked_k(int k, const char* metric) {
  OSPREY_CHECK(k >= 1, "{}: k must be at least 1. Received: k={}", metric, k);
  return k;
}

}  // namespace

TopKCategoricalAccuracy::TopKCategoricalAccuracy(int k, std::string name)
    : MeanMetricWrapper("TopKCategoricalAccuracy", std::move(name)),
      k_(checked_k(k, "TopKCategoricalAccuracy")) {}

nlohmann::json TopKCategoricalAccuracy::get_config() const {
  nlohmann::json c = MeanMetricWrapper::get_config();
  c["k"] = k_;
  return c;
}

Shape TopKCategoricalAccuracy::compute_values(const Tensor& y_true, const Tensor& y_pred,
                                              std::vector<double>& values) const {
  const auto [lead, classes] = detail::class_shape(y_pred.shape(), class_name());
  OSPREY_CHECK(
      y_true.shape() == y_pred.shape(),
      "{}: y_true and y_pred must have the same shape. Received: y_true.shape={}, y_pred.shape={}",
      class_name(), y_true.shape().to_string(), y_pred.shape().to_string());
  const Tensor t = detail::host_numbers(y_true), p = detail::host_numbers(y_pred);
  const int64_t rows = lead.numel();
  values.resize(static_cast<size_t>(rows));
  detail::visit_numbers(t, [&](const auto* tp) {
    detail::visit_numbers(p, [&](const auto* pp) {
      for (int64_t i = 0; i < rows; ++i) {
        const auto target = static_cast<double>(detail::argmax(tp + i * classes, classes));
        values[static_cast<size_t>(i)] =
            in_top_k(pp + i * classes, classes, target, k_) ? 1.0 : 0.0;
      }
    });
  });
  return lead;
}

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(int k, std::string name)
    : MeanMetricWrapper("SparseTopKCategoricalAccuracy", std::move(name)),
      k_(checked_k(k, "SparseTopKCategoricalAccuracy")) {}

nlohmann::json SparseTopKCategoricalAccuracy::get_config() const {
  nlohmann::json c = MeanMetricWrapper::get_config();
  c["k"] = k_;
  return c;
}

Shape SparseTopKCategoricalAccuracy::compute_values(const Tensor& y_true, const Tensor& y_pred,
                                                    std::vector<double>& values) const {
  const auto [lead, classes] = detail::class_shape(y_pred.shape(), class_name());
  detail::check_sparse_labels(y_true.shape(), lead, y_pred.shape(), class_name());
  const Tensor t = detail::host_numbers(y_true), p = detail::host_numbers(y_pred);
  const int64_t rows = lead.numel();
  values.resize(static_cast<size_t>(rows));
  detail::visit_numbers(t, [&](const auto* tp) {
    detail::visit_numbers(p, [&](const auto* pp) {
      for (int64_t i = 0; i < rows; ++i) {
        values[static_cast<size_t>(i)] =
            in_top_k(pp + i * classes, classes, static_cast<double>(tp[i]), k_) ? 1.0 : 0.0;
      }
    });
  });
  return lead;
}

}  // namespace osprey::metrics
