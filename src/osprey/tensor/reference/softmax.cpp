// Reference softmax / log-softmax along any axis and the fused softmax cross-entropy. Both shift
// by the row max before exponentiating, so no finite input overflows.

#include <algorithm>
#include <cmath>
#include <limits>

#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

// x seen as [outer, len, inner] around the softmax axis; a "row" is one (outer, inner) pair.
struct AxisSplit {
  int64_t outer, len, inner;
  AxisSplit(const Shape& s, int axis) {
    const int a = normalize_axis(axis, s.ndim(), "softmax");
    outer = detail::prod(s, 0, a);
    len = s[a];
    inner = detail::prod(s, a + 1, s.ndim());
  }
  int64_t index(int64_t o, int64_t k, int64_t i) const { return (o * len + k) * inner + i; }
};

// log(sum(exp(row))) of `len` values `stride` apart, shifted by the max for stability.
double log_sum_exp(const double* row, int64_t len, int64_t stride) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < len; ++k) mx = std::max(mx, row[k * stride]);
  if (std::isinf(mx)) return mx;  // all -inf (or a +inf): exp of the shift would give NaN
  double sum = 0.0;
  for (int64_t k = 0; k < len; ++k) sum += std::exp(row[k * stride] - mx);
  return mx + std::log(sum);
}

// Class indices [N] (any integer dtype) or a distribution [N, C] (floating dtype).
bool has_index_labels(const Tensor& labels) { return !is_floating(labels.dtype()); }

// target[n, :] = (1 - ls) * label_distribution[n, :] + ls / C, after checking index labels.
std::vector<double> targets(const Tensor& labels, int64_t n, int64_t c, double ls) {
  std::vector<double> t(static_cast<size_t>(n * c), ls / static_cast<double>(c));
  if (has_index_labels(labels)) {
    const std::vector<double> lv = detail::to_doubles(labels);
    OSPREY_ASSERT(static_cast<int64_t>(lv.size()) == n, "cross_entropy: {} labels for {} samples",
                  lv.size(), n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t label = detail::to_index(lv[i]);
      OSPREY_CHECK(label >= 0 && label < c,
                   "cross_entropy: label {} of sample {} is out of range for {} classes", label, i,
                   c);
      t[i * c + label] += 1.0 - ls;
    }
  } else {
    const std::vector<double> lv = detail::to_doubles(labels);
    OSPREY_ASSERT(static_cast<int64_t>(lv.size()) == n * c,
                  "cross_entropy: {} label values for [{}, {}] logits", lv.size(), n, c);
    for (size_t k = 0; k < t.size(); ++k) t[k] += (1.0 - ls) * lv[k];
  }
  return t;
}

}  // namespace

void softmax_forward(const Tensor& x, int axis, bool log, Tensor& y) {
  const AxisSplit s(x.shape(), axis);
  const std::vector<double> xv = detail::to_doubles(x);
  std::vector<double> yv(xv.size());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t first = s.index(o, 0, i);
      const double lse = log_sum_exp(xv.data() + first, s.len, s.inner);
      for (int64_t k = 0; k < s.len; ++k) {
        const int64_t j = first + k * s.inner;
        yv[j] = log ? xv[j] - lse : std::exp(xv[j] - lse);
      }
    }
  }
  detail::from_doubles(yv, y);
}

// softmax: dx = y * (dy - sum(dy * y));  log-softmax: dx = dy - exp(y) * sum(dy).
void softmax_backward(const Tensor& dy, const Tensor& y, int axis, bool log, Tensor& dx) {
  const AxisSplit s(y.shape(), axis);
  const std::vector<double> dyv = detail::to_doubles(dy), yv = detail::to_doubles(y);
  std::vector<double> dxv(yv.size());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      double dot = 0.0;
      for (int64_t k = 0; k < s.len; ++k) {
        const int64_t j = s.index(o, k, i);
        dot += log ? dyv[j] : dyv[j] * yv[j];
      }
      for (int64_t k = 0; k < s.len; ++k) {
        const int64_t j = s.index(o, k, i);
        dxv[j] = log ? dyv[j] - std::exp(yv[j]) * dot : yv[j] * (dyv[j] - dot);
      }
    }
  }
  detail::from_doubles(dxv, dx);
}

// losses[n] = -sum_c target[n, c] * log_softmax(logits)[n, c]; probs = softmax(logits).
void cross_entropy_forward(const Tensor& logits, const Tensor& labels, double label_smoothing,
                           Tensor& losses, Tensor& probs) {
  OSPREY_ASSERT(logits.ndim() == 2, "reference::cross_entropy: logits must be [N, C], got {}",
                logits.describe());
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  const std::vector<double> t = targets(labels, n, c, label_smoothing);
  const std::vector<double> xv = detail::to_doubles(logits);
  std::vector<double> lv(static_cast<size_t>(n)), pv(xv.size());
  for (int64_t i = 0; i < n; ++i) {
    const double* row = xv.data() + i * c;
    const double lse = log_sum_exp(row, c, 1);
    double loss = 0.0;
    for (int64_t k = 0; k < c; ++k) {
      // A zero target contributes nothing, even where log_softmax is -inf.
      if (t[i * c + k] != 0.0) loss -= t[i * c + k] * (row[k] - lse);
      pv[i * c + k] = std::exp(row[k] - lse);
    }
    lv[i] = loss;
  }
  detail::from_doubles(lv, losses);
  detail::from_doubles(pv, probs);
}

void cross_entropy_backward(const Tensor& probs, const Tensor& labels, double label_smoothing,
                            const Tensor& dloss, Tensor& dlogits) {
  const int64_t n = probs.shape()[0], c = probs.shape()[1];
  const std::vector<double> t = targets(labels, n, c, label_smoothing);
  const std::vector<double> pv = detail::to_doubles(probs), dlv = detail::to_doubles(dloss);
  std::vector<double> dv(pv.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < c; ++k) dv[i * c + k] = dlv[i] * (pv[i * c + k] - t[i * c + k]);
  }
  detail::from_doubles(dv, dlogits);
}

}  // namespace osprey::reference
