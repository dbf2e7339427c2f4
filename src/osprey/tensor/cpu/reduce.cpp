// Fast sum/mean/max/min for float32 and float64. x (made dense) is seen as [outer, R, inner]
// with the reduced axes merged into R; other patterns (reduced axes that are not adjacent once
// size-1 axes are dropped) go to the reference kernel. Sums accumulate in double.
//
// Determinism: work is cut by range only (num_chunks of the problem size, never of the thread
// count), every chunk's partial result is computed in a fixed order and partials are combined in
// chunk order, so the result is bitwise the same on any number of threads.
#include <cmath>
#include <limits>
#include <vector>

#include "osprey/core/parallel.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/cpu/loops.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

// A NaN anywhere makes max/min NaN, as the reference kernel.
inline double max_nan(double acc, double v) { return (v > acc || v != v) ? v : acc; }
inline double min_nan(double acc, double v) { return (v < acc || v != v) ? v : acc; }
template <class T>
inline T max_nan_t(T acc, T v) {
  return (v > acc || v != v) ? v : acc;
}
template <class T>
inline T min_nan_t(T acc, T v) {
  return (v < acc || v != v) ? v : acc;
}

double init_of(ReduceOp op) {
  if (op == ReduceOp::max) return -std::numeric_limits<double>::infinity();
  if (op == ReduceOp::min) return std::numeric_limits<double>::infinity();
  return 0.0;
}

double combine(ReduceOp op, double acc, double v) {
  switch (op) {
    case ReduceOp::max:
      return max_nan(acc, v);
    case ReduceOp::min:
      return min_nan(acc, v);
    default:
      return acc + v;
  }
}

// Reduces x[0..n) (contiguous) in a fixed order: 16 lanes, then the lanes pairwise.
template <class T>
double reduce_contiguous(ReduceOp op, const T* x, int64_t n) {
  constexpr int kLanes = 16;
  int64_t i = 0;
  if (op == ReduceOp::sum || op == ReduceOp::mean) {
    double acc[kLanes] = {};
    for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
      for (int j = 0; j < kLanes; ++j) acc[j] += static_cast<double>(x[i + j]);
    }
    for (int w = kLanes / 2; w >= 1; w /= 2) {
      for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
    }
    double s = acc[0];
    for (; i < n; ++i) s += static_cast<double>(x[i]);
    return s;
  }
  const bool is_max = op == ReduceOp::max;
  T acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = static_cast<T>(init_of(op));
  for (; i + kLanes <= n; i += kLanes) {
    if (is_max) {
#pragma omp simd
      for (int j = 0; j < kLanes; ++j) acc[j] = max_nan_t(acc[j], x[i + j]);
    } else {
#pragma omp simd
      for (int j = 0; j < kLanes; ++j) acc[j] = min_nan_t(acc[j], x[i + j]);
    }
  }
  double r = init_of(op);
  for (int j = 0; j < kLanes; ++j) r = combine(op, r, static_cast<double>(acc[j]));
  for (; i < n; ++i) r = combine(op, r, static_cast<double>(x[i]));
  return r;
}

// acc[0..n) op= x[0..n) elementwise.
template <class T>
void accumulate_row(ReduceOp op, double* acc, const T* x, int64_t n) {
  if (op == ReduceOp::sum || op == ReduceOp::mean) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(x[i]);
  } else if (op == ReduceOp::max) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) acc[i] = max_nan(acc[i], static_cast<double>(x[i]));
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) acc[i] = min_nan(acc[i], static_cast<double>(x[i]));
  }
}

template <class T>
void reduce_orn(ReduceOp op, const T* x, T* out, int64_t outer, int64_t r, int64_t inner) {
  const double scale = op == ReduceOp::mean ? 1.0 / static_cast<double>(r) : 1.0;
  auto finish = [&](double v) { return static_cast<T>(op == ReduceOp::mean ? v * scale : v); };
  if (inner == 1) {
    // Row reductions: rows split into range chunks when long, partials combined in order.
    const int64_t chunks = num_chunks(r, kGrain);
    if (chunks <= 1) {
      parallel_for(0, outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(r, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t o = b; o < e; ++o)
                       out[o] = finish(reduce_contiguous(op, x + o * r, r));
                   });
      return;
    }
    std::vector<double> part(static_cast<size_t>(outer * chunks));
    parallel_for(0, outer * chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / chunks, c = t % chunks;
        const int64_t lo = chunk_begin(r, chunks, c), hi = chunk_begin(r, chunks, c + 1);
        part[static_cast<size_t>(t)] = reduce_contiguous(op, x + o * r + lo, hi - lo);
      }
    });
    for (int64_t o = 0; o < outer; ++o) {
      double acc = init_of(op);
      for (int64_t c = 0; c < chunks; ++c)
        acc = combine(op, acc, part[static_cast<size_t>(o * chunks + c)]);
      out[o] = finish(acc);
    }
    return;
  }
  // Column reductions: out[o, i] = op over r of x[o, r, i].
  if (inner >= 4096 || r * inner <= kGrain) {
    // Wide rows (or little work): split the columns into blocks, each block over all of r.
    const int64_t block = std::min<int64_t>(inner, 1024);
    const int64_t blocks = (inner + block - 1) / block;
    parallel_for(0, outer * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(r * block, 1)),
                 [&](int64_t b, int64_t e) {
                   std::vector<double> acc(static_cast<size_t>(block));
                   for (int64_t t = b; t < e; ++t) {
                     const int64_t o = t / blocks, i0 = (t % blocks) * block;
                     const int64_t n = std::min(block, inner - i0);
                     std::fill(acc.begin(), acc.begin() + n, init_of(op));
                     const T* base = x + o * r * inner + i0;
                     for (int64_t k = 0; k < r; ++k)
                       accumulate_row(op, acc.data(), base + k * inner, n);
                     for (int64_t i = 0; i < n; ++i)
                       out[o * inner + i0 + i] = finish(acc[static_cast<size_t>(i)]);
                   }
                 });
    return;
  }
  // Narrow rows, many of them (a bias gradient [N*H*W, C] -> [C]): split r into range chunks
  // with a partial row each, then add the partials in chunk order.
  const int64_t chunks = num_chunks(r, std::max<int64_t>(1, kGrain / inner));
  std::vector<double> part(static_cast<size_t>(outer * chunks * inner), init_of(op));
  parallel_for(0, outer * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / chunks, c = t % chunks;
      const int64_t lo = chunk_begin(r, chunks, c), hi = chunk_begin(r, chunks, c + 1);
      double* acc = part.data() + t * inner;
      const T* base = x + o * r * inner;
      for (int64_t k = lo; k < hi; ++k) accumulate_row(op, acc, base + k * inner, inner);
    }
  });
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = init_of(op);
      for (int64_t c = 0; c < chunks; ++c)
        acc = combine(op, acc, part[static_cast<size_t>((o * chunks + c) * inner + i)]);
      out[o * inner + i] = finish(acc);
    }
  }
}

}  // namespace

void reduce(ReduceOp op, const Tensor& x_in, Tensor& out) {
  const DType d = x_in.dtype();
  const bool fast = (d == DType::float32 || d == DType::float64) && out.dtype() == d &&
                    out.is_contiguous() && out.ndim() == x_in.ndim() && x_in.numel() > 0;
  if ((d == DType::bfloat16 || d == DType::float16) && out.dtype() == d && out.is_contiguous() &&
      out.ndim() == x_in.ndim() && x_in.numel() > 0) {
    // 16-bit inputs (a bias gradient under mixed precision) reduce in float32: faster than the
    // reference's double per element, and one rounding at the end.
    Tensor o32 = Tensor::empty(out.shape(), {DType::float32, out.device()});
    reduce(op, x_in.to(DType::float32), o32);
    copy(o32, out);
    return;
  }
  if (!fast) return reference::reduce(op, x_in, out);
  // Classify axes (size-1 axes dropped) and merge runs of one kind: kept, reduced, kept.
  int64_t sizes[3] = {1, 1, 1};
  int stage = 0;  // 0: leading kept axes, 1: reduced axes, 2: trailing kept axes
  for (int i = 0; i < x_in.ndim(); ++i) {
    const int64_t n = x_in.shape()[i];
    if (n == 1) continue;
    const bool reduced = out.shape()[i] != n;
    if (reduced) {
      if (stage == 2) return reference::reduce(op, x_in, out);
      stage = 1;
      sizes[1] *= n;
    } else {
      if (stage == 1) stage = 2;
      sizes[stage == 0 ? 0 : 2] *= n;
    }
  }
  const Tensor x = x_in.contiguous();
  if (d == DType::float32) {
    reduce_orn(op, x.data<float>(), out.data<float>(), sizes[0], sizes[1], sizes[2]);
  } else {
    reduce_orn(op, x.data<double>(), out.data<double>(), sizes[0], sizes[1], sizes[2]);
  }
}

}  // namespace osprey::cpu
