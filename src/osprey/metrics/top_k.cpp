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
  return detail::score_dense_rows(
      y_true, y_pred, class_name(), values, [this](const auto* t, const auto* p, int64_t classes) {
        const auto target = static_cast<double>(detail::argmax(t, classes));
        return in_top_k(p, classes, target, k_) ? 1.0 : 0.0;
      });
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
  return detail::score_sparse_rows(y_true, y_pred, class_name(), values,
                                   [this](double label, const auto* p, int64_t classes) {
                                     return in_top_k(p, classes, label, k_) ? 1.0 : 0.0;
                                   });
}

}  // namespace osprey::metrics
