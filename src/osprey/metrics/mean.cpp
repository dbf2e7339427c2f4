#include "osprey/metrics/mean.h"

#include "osprey/metrics/metric_inputs.h"

namespace osprey::metrics {

void WeightedMean::load(const std::vector<double>& values, const std::string& metric) {
  OSPREY_CHECK(values.size() == 2,
               "{}: the saved state holds {} values; a mean keeps 2 (total and count)", metric,
               values.size());
  total_ = values[0];
  count_ = values[1];
}

void WeightedMean::add(const double* v, const Shape& shape, const Tensor* sample_weight,
                       const char* metric) {
  const detail::Weights w(sample_weight, shape, metric);
  const int64_t n = w.samples(), m = w.per_sample();
  if (n == 0 || m == 0) return;
  const double inv = 1.0 / static_cast<double>(m);
  if (!w.defined()) {
    double s = 0.0;
    for (int64_t k = 0; k < n * m; ++k) s += v[k];
    total_ += s * inv;
    count_ += static_cast<double>(n);
    return;
  }
  double total = 0.0, count = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const double wij = w.at(i, j);
      total += v[i * m + j] * wij;
      count += wij;
    }
  }
  total_ += total * inv;
  count_ += count * inv;
}

void Mean::update_state(const Tensor& values, const Tensor* sample_weight) {
  OSPREY_CHECK(values.defined(), "Mean: values is an undefined Tensor");
  const Tensor h = detail::host_numbers(values);
  buffer_.resize(static_cast<size_t>(h.numel()));
  detail::visit_numbers(h, [&](const auto* p) {
    for (int64_t k = 0; k < h.numel(); ++k)
      buffer_[static_cast<size_t>(k)] = static_cast<double>(p[k]);
  });
  mean_.add(buffer_.data(), h.shape(), sample_weight, class_name());
}

void Mean::update_state(const Tensor&, const Tensor& y_pred, const Tensor* sample_weight) {
  update_state(y_pred, sample_weight);
}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred,
                                     const Tensor* sample_weight) {
  OSPREY_CHECK(y_true.defined() && y_pred.defined(),
               "{}: y_true and y_pred must be defined tensors", class_name());
  const Shape shape = compute_values(y_true, y_pred, values_);
  mean_.add(values_.data(), shape, sample_weight, class_name());
}

}  // namespace osprey::metrics
