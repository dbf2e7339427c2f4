// Fused softmax cross-entropy (forward: row max, vectorized exp, log-sum-exp, loss and probs in
// one pass over each row; backward: dloss * (probs - target)), the row gather of embeddings
// (any dtype) and its adjoint, the float32 row scatter-add. Labels are validated serially first so
// that the error names the first bad sample, as the reference kernel's does.
#include <cmath>
#include <cstring>
#include <limits>

#include "osprey/core/parallel.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/cpu/loops.h"
#include "osprey/tensor/cpu/simd_math.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

bool index_dtype(DType d) { return d == DType::int32 || d == DType::int64; }

int64_t label_at(const Tensor& labels, int64_t i) {
  return labels.dtype() == DType::int32 ? labels.data<int32_t>()[i] : labels.data<int64_t>()[i];
}

void check_labels(const Tensor& labels, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = label_at(labels, i);
    OSPREY_CHECK(label >= 0 && label < c,
                 "cross_entropy: label {} of sample {} is out of range for {} classes", label, i,
                 c);
  }
}

// Rows per parallel chunk for rows of c elements.
int64_t row_grain(int64_t c) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1) / 4); }

// Labels usable by the fast loops: [N] int32/int64, or a dense float32 [N, C] distribution.
bool fast_labels(const Tensor& labels, int64_t n, int64_t c) {
  if (index_dtype(labels.dtype())) return labels.numel() == n;
  return labels.dtype() == DType::float32 && labels.numel() == n * c;
}

}  // namespace

void cross_entropy_forward(const Tensor& logits_in, const Tensor& labels_in, double label_smoothing,
                           Tensor& losses, Tensor& probs) {
  const bool fast = logits_in.dtype() == DType::float32 && logits_in.ndim() == 2 &&
                    losses.dtype() == DType::float32 && probs.dtype() == DType::float32 &&
                    losses.is_contiguous() && probs.is_contiguous() && logits_in.numel() > 0 &&
                    fast_labels(labels_in, logits_in.shape()[0], logits_in.shape()[1]);
  if (!fast)
    return reference::cross_entropy_forward(logits_in, labels_in, label_smoothing, losses, probs);
  const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous();
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  const bool indices = index_dtype(labels.dtype());
  if (indices) check_labels(labels, n, c);
  const float* x = logits.data<float>();
  float* p = probs.data<float>();
  float* loss = losses.data<float>();
  const float* dist = indices ? nullptr : labels.data<float>();
  const double ls = label_smoothing, uniform = ls / static_cast<double>(c);
  parallel_for(0, n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* row = x + i * c;
      float* prow = p + i * c;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, row[k]);
      double lse;
      if (std::isfinite(mx)) {
        const double sum = exp_shifted(row, mx, prow, c);
        lse = static_cast<double>(mx) + std::log(sum);
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t k = 0; k < c; ++k) prow[k] *= inv;
      } else {
        // All -inf, a +inf, or a NaN: as the reference, lse is the max and probs follow from it.
        lse = static_cast<double>(mx);
        for (int64_t k = 0; k < c; ++k)
          prow[k] = static_cast<float>(std::exp(static_cast<double>(row[k]) - lse));
      }
      double l = 0.0;
      if (indices) {
        const int64_t label = label_at(labels, i);
        l = (1.0 - ls) * (lse - static_cast<double>(row[label]));
        if (ls != 0.0) {
          double s = 0.0;
          for (int64_t k = 0; k < c; ++k) s += lse - static_cast<double>(row[k]);
          l += uniform * s;
        }
      } else {
        const float* t = dist + i * c;
        for (int64_t k = 0; k < c; ++k) {
          const double tk = (1.0 - ls) * static_cast<double>(t[k]) + uniform;
          if (tk != 0.0) l += tk * (lse - static_cast<double>(row[k]));
        }
      }
      loss[i] = static_cast<float>(l);
    }
  });
}

void cross_entropy_backward(const Tensor& probs_in, const Tensor& labels_in, double label_smoothing,
                            const Tensor& dloss_in, Tensor& dlogits) {
  const bool fast = probs_in.dtype() == DType::float32 && probs_in.ndim() == 2 &&
                    dloss_in.dtype() == DType::float32 && dlogits.dtype() == DType::float32 &&
                    dlogits.is_contiguous() && probs_in.numel() > 0 &&
                    dloss_in.numel() == probs_in.shape()[0] &&
                    fast_labels(labels_in, probs_in.shape()[0], probs_in.shape()[1]);
  if (!fast)
    return reference::cross_entropy_backward(probs_in, labels_in, label_smoothing, dloss_in,
                                             dlogits);
  const Tensor probs = probs_in.contiguous(), labels = labels_in.contiguous(),
               dloss = dloss_in.contiguous();
  const int64_t n = probs.shape()[0], c = probs.shape()[1];
  const bool indices = index_dtype(labels.dtype());
  if (indices) check_labels(labels, n, c);
  const float* p = probs.data<float>();
  const float* dl = dloss.data<float>();
  float* dx = dlogits.data<float>();
  const float* dist = indices ? nullptr : labels.data<float>();
  const float ls = static_cast<float>(label_smoothing);
  const float uniform = static_cast<float>(label_smoothing / static_cast<double>(c));
  parallel_for(0, n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float g = dl[i];
      const float* prow = p + i * c;
      float* drow = dx + i * c;
      if (indices) {
#pragma omp simd
        for (int64_t k = 0; k < c; ++k) drow[k] = g * (prow[k] - uniform);
        const int64_t label = label_at(labels, i);
        drow[label] = g * (prow[label] - (uniform + (1.0f - ls)));
      } else {
        const float* t = dist + i * c;
#pragma omp simd
        for (int64_t k = 0; k < c; ++k) drow[k] = g * (prow[k] - ((1.0f - ls) * t[k] + uniform));
      }
    }
  });
}

void gather_rows(const Tensor& table_in, const Tensor& indices_in, Tensor& out) {
  const bool fast = table_in.ndim() == 2 && index_dtype(indices_in.dtype()) &&
                    out.is_contiguous() && out.dtype() == table_in.dtype() &&
                    out.numel() == indices_in.numel() * table_in.shape()[1];
  if (!fast) return reference::gather_rows(table_in, indices_in, out);
  const Tensor table = table_in.contiguous(), indices = indices_in.contiguous();
  const int64_t rows = table.shape()[0], dim = table.shape()[1], n = indices.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = label_at(indices, i);
    OSPREY_CHECK(v >= 0 && v < rows,
                 "{}: index {} at position {} is out of range for a table of {} rows "
                 "(expected 0 <= index < {})",
                 "gather_rows", v, i, rows, rows);
  }
  const size_t row_bytes = static_cast<size_t>(dim) * table.itemsize();
  const char* src = static_cast<const char*>(table.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  parallel_for(
      0, n,
      std::max<int64_t>(1, kGrain * 4 / std::max<int64_t>(static_cast<int64_t>(row_bytes), 1)),
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          std::memcpy(dst + static_cast<size_t>(i) * row_bytes,
                      src + static_cast<size_t>(label_at(indices, i)) * row_bytes, row_bytes);
        }
      });
}

void scatter_add_rows(const Tensor& grad_in, const Tensor& indices_in, Tensor& dtable) {
  const bool fast = dtable.ndim() == 2 && dtable.is_contiguous() &&
                    dtable.dtype() == DType::float32 && grad_in.dtype() == DType::float32 &&
                    index_dtype(indices_in.dtype()) &&
                    grad_in.numel() == indices_in.numel() * dtable.shape()[1];
  if (!fast) return reference::scatter_add_rows(grad_in, indices_in, dtable);
  const Tensor grad = grad_in.contiguous(), indices = indices_in.contiguous();
  const int64_t rows = dtable.shape()[0], dim = dtable.shape()[1], n = indices.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = label_at(indices, i);
    OSPREY_CHECK(v >= 0 && v < rows,
                 "{}: index {} at position {} is out of range for a table of {} rows "
                 "(expected 0 <= index < {})",
                 "scatter_add_rows", v, i, rows, rows);
  }
  const float* g = grad.data<float>();
  float* t = dtable.data<float>();
  // Split by columns: repeated indices then never race, and each element adds its rows in
  // index order whatever the thread count.
  parallel_for(0, dim, std::max<int64_t>(16, kGrain / std::max<int64_t>(n, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = 0; i < n; ++i) {
                   float* dst = t + label_at(indices, i) * dim;
                   const float* src = g + i * dim;
#pragma omp simd
                   for (int64_t d = b; d < e; ++d) dst[d] += src[d];
                 }
               });
}

}  // namespace osprey::cpu
