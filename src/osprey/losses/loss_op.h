// Internal helpers of the loss classes: input alignment and checks, the compute dtype, and
// record_loss, which turns per-sample losses plus their precomputed derivative d loss / d y_pred
// into one autograd node (backward is a single multiply, so no loss builds a chain of small ops).
// mean_over_last_axis runs an elementwise loss (value and derivative) in one tight loop.
#pragma once

#include <cstdint>
#include <utility>

#include "osprey/autograd/node.h"
#include "osprey/core/parallel.h"
#include "osprey/tensor/align_targets.h"
#include "osprey/tensor/tensor.h"

namespace osprey::losses::detail {

using autograd::Variable;

// float64 for float64 predictions, float32 for everything else (bf16/f16 compute through f32).
DType compute_dtype(DType pred) noexcept;
// t as a contiguous tensor of dtype d in host memory (no copy when it already is one).
Tensor as_compute(const Tensor& t, DType d);
// Keras's probability clipping, [epsilon, 1 - epsilon] with epsilon = 1e-7, rounded to the
// compute dtype as Keras computes it (in float32, 1 - 1e-7 is 0.99999988).
std::pair<double, double> clip_bounds(DType d) noexcept;

// y_true viewed with y_pred's shape ([N] against [N, 1] either way), or ValueError naming the loss;
// shared with metrics, so it lives in tensor/align_targets.h.
using osprey::detail::align_targets;
// Leading (sample) shape and last-axis size; rank 0 and 1 count as one value per sample.
std::pair<Shape, int64_t> split_samples(const Shape& s);
// Requires a defined floating-point y_pred and a defined y_true on the CPU.
void check_inputs(const Tensor& y_true, const Variable& y_pred, const char* loss);

// The input of the op that produced y (e.g. "softmax", "sigmoid"), or an undefined Variable when
// y was not produced by a recorded, unreleased op of that name.
Variable producer_input(const Variable& y, const char* op);

// Records `losses` [samples...] as a function of y_pred whose Jacobian is diagonal per sample:
// d y_pred[i, j] = g[i] * dpred[i, j]. dpred has y_pred's shape in losses' dtype; it may be
// undefined when y_pred needs no gradient (a constant is returned then).
Variable record_loss(Tensor losses, Tensor dpred, const Variable& y_pred, const char* op);

template <class Fn>
decltype(auto) visit_compute(DType d, Fn&& fn) {
  return d == DType::float64 ? fn(double{}) : fn(float{});
}
// Rows per parallel chunk for rows of `cols` elements (about 32K elements per chunk).
inline int64_t row_grain(int64_t cols) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(cols, 1));
}

// Elementwise loss f(t, p) -> {value, d value / d p} averaged over the last axis of y_pred (one
// loop, in double; the derivative only when a gradient is wanted). y_true is already aligned.
template <class F>
Variable mean_over_last_axis(const char* op, const Tensor& y_true, const Variable& y_pred, F f) {
  const Tensor& pv = y_pred.value();
  const DType d = compute_dtype(pv.dtype());
  const Tensor p = as_compute(pv, d), t = as_compute(y_true, d);
  // Named, not a structured binding: clang 14 (clang-tidy's) cannot capture bindings in lambdas.
  const std::pair<Shape, int64_t> split = split_samples(pv.shape());
  const Shape& lead = split.first;
  const int64_t cols = split.second;
  const int64_t rows = lead.numel();
  const bool grad = autograd::should_record(y_pred);
  Tensor losses = Tensor::empty(lead, {d, pv.device()});
  Tensor dpred = grad ? Tensor::empty(pv.shape(), {d, pv.device()}) : Tensor();
  visit_compute(d, [&](auto tag) {
    using T = decltype(tag);
    const T* pp = p.data<T>();
    const T* tp = t.data<T>();
    T* lp = losses.data<T>();
    T* dp = grad ? dpred.data<T>() : nullptr;
    const double inv = 1.0 / static_cast<double>(cols);
    parallel_for(0, rows, row_grain(cols), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double acc = 0.0;
        for (int64_t j = i * cols; j < (i + 1) * cols; ++j) {
          const auto [l, dl] = f(static_cast<double>(tp[j]), static_cast<double>(pp[j]));
          acc += l;
          if (dp) dp[j] = static_cast<T>(dl * inv);
        }
        lp[i] = static_cast<T>(acc * inv);
      }
    });
  });
  return record_loss(std::move(losses), std::move(dpred), y_pred, op);
}

}  // namespace osprey::losses::detail
