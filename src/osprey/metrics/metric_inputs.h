// Internal helpers of the metrics: tensors as contiguous host arrays of float or double (so each
// metric's loop is written once per element type), Keras's rank alignment of y_true against
// y_pred, and sample weights broadcast over a [samples, values per sample] grid.
#pragma once

#include <cstdint>
#include <type_traits>

#include "osprey/tensor/align_targets.h"
#include "osprey/tensor/tensor.h"

namespace osprey::metrics::detail {

// t as a contiguous host tensor that a loop can read: float32 and float64 stay as they are (no
// copy when contiguous), bf16/f16/f8 become float32, integers and bool float64 (exact to 2^53).
Tensor host_floats(const Tensor& t);
// Calls fn(const T* data) with T = float or double, the element type of host_floats(t).
template <class Fn>
decltype(auto) visit_floats(const Tensor& host, Fn&& fn) {
  if (host.dtype() == DType::float64) return fn(host.data<double>());
  return fn(host.data<float>());
}
// As host_floats, but int32 and int64 stay too (labels are read without a copy); int8, uint8 and
// bool become int32.
Tensor host_numbers(const Tensor& t);
// Calls fn(const T* data) with T = float, double, int32_t or int64_t, the type of host_numbers(t).
template <class Fn>
decltype(auto) visit_numbers(const Tensor& host, Fn&& fn) {
  switch (host.dtype()) {
    case DType::float64:
      return fn(host.data<double>());
    case DType::int32:
      return fn(host.data<int32_t>());
    case DType::int64:
      return fn(host.data<int64_t>());
    default:
      return fn(host.data<float>());
  }
}

// y_true viewed with y_pred's shape ([N] against [N, 1] either way), or ValueError naming the
// metric; shared with losses, so it lives in tensor/align_targets.h.
using osprey::detail::align_targets;
// y_pred [..., C] -> {lead [...], C}; ValueError naming the metric when y_pred has no class axis.
std::pair<Shape, int64_t> class_shape(const Shape& pred, const char* metric);
// Sparse labels must have shape lead or lead + [1]; ValueError naming both shapes otherwise.
void check_sparse_labels(const Shape& labels, const Shape& lead, const Shape& pred,
                         const char* metric);
template <class T>
bool is_nan(T v) noexcept {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  return false;
}
// Index of the largest of n values, the first on ties (as argmax); NaNs never win. Two passes:
// the max over eight independent lanes (vectorizable, no loop-carried select chain), then the
// first index holding it.
template <class T>
int64_t argmax(const T* row, int64_t n) {
  int64_t c = 0;
  while (c + 1 < n && is_nan(row[c])) ++c;
  T lanes[8];
  for (T& l : lanes) l = row[c];
  int64_t k = c + 1;
  for (; k + 8 <= n; k += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] = row[k + l] > lanes[l] ? row[k + l] : lanes[l];
  }
  T top = lanes[0];
  for (T l : lanes) top = l > top ? l : top;
  for (; k < n; ++k) top = row[k] > top ? row[k] : top;
  for (int64_t j = c; j < n; ++j) {
    if (row[j] == top) return j;
  }
  return c;
}

// One score per row of y_pred [..., C], against the matching row of a dense y_true of the same
// shape: fn(true_row, pred_row, C) -> double. Returns the leading shape (one value per row).
template <class Fn>
Shape score_dense_rows(const Tensor& y_true, const Tensor& y_pred, const char* metric,
                       std::vector<double>& values, Fn&& fn) {
  const auto shape = class_shape(y_pred.shape(), metric);  // not a binding: lambdas capture it
  const Shape& lead = shape.first;
  const int64_t classes = shape.second;
  OSPREY_CHECK(
      y_true.shape() == y_pred.shape(),
      "{}: y_true and y_pred must have the same shape. Received: y_true.shape={}, y_pred.shape={}",
      metric, y_true.shape().to_string(), y_pred.shape().to_string());
  const Tensor t = host_numbers(y_true), p = host_numbers(y_pred);
  const int64_t rows = lead.numel();
  values.resize(static_cast<size_t>(rows));
  visit_numbers(t, [&](const auto* tp) {
    visit_numbers(p, [&](const auto* pp) {
      for (int64_t i = 0; i < rows; ++i) {
        values[static_cast<size_t>(i)] = fn(tp + i * classes, pp + i * classes, classes);
      }
    });
  });
  return lead;
}

// The same against sparse labels y_true [...] (class indices): fn(label, pred_row, C) -> double.
template <class Fn>
Shape score_sparse_rows(const Tensor& y_true, const Tensor& y_pred, const char* metric,
                        std::vector<double>& values, Fn&& fn) {
  const auto shape = class_shape(y_pred.shape(), metric);  // not a binding: lambdas capture it
  const Shape& lead = shape.first;
  const int64_t classes = shape.second;
  check_sparse_labels(y_true.shape(), lead, y_pred.shape(), metric);
  const Tensor t = host_numbers(y_true), p = host_numbers(y_pred);
  const int64_t rows = lead.numel();
  values.resize(static_cast<size_t>(rows));
  visit_numbers(t, [&](const auto* tp) {
    visit_numbers(p, [&](const auto* pp) {
      for (int64_t i = 0; i < rows; ++i) {
        values[static_cast<size_t>(i)] = fn(static_cast<double>(tp[i]), pp + i * classes, classes);
      }
    });
  });
  return lead;
}

// Weights over values laid out [samples, per_sample]: none (all 1), one scalar, one per sample
// (shape [N] or [N, 1, ...]), or one per value (the values' shape).
class Weights {
 public:
  Weights(const Tensor* sample_weight, const Shape& values, const char* metric);
  bool defined() const noexcept { return mode_ != Mode::none; }
  double at(int64_t sample, int64_t j) const noexcept {
    switch (mode_) {
      case Mode::none:
        return 1.0;
      case Mode::scalar:
        return w_[0];
      case Mode::per_sample:
        return w_[sample];
      case Mode::per_value:
        return w_[sample * per_sample_ + j];
    }
    return 1.0;
  }
  int64_t samples() const noexcept { return samples_; }
  int64_t per_sample() const noexcept { return per_sample_; }

 private:
  enum class Mode { none, scalar, per_sample, per_value };
  Mode mode_ = Mode::none;
  Tensor host_;
  const double* w_ = nullptr;
  int64_t samples_ = 0, per_sample_ = 0;
};

}  // namespace osprey::metrics::detail
