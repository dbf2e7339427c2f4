// The fused update loop every optimizer shares (internal to optim). A step is one flat range
// over the elements of all variables that have a gradient; parallel_for cuts it into large
// pieces and each piece runs, per variable it touches, one loop that reads the gradient, the
// weight and the slots once and writes the weight and the slots once: unscale and clip the
// gradient, decay the weight (decoupled, Keras 3), then the optimizer's rule (a small kernel
// struct, instantiated per value/gradient dtype). Math is in float for float32/bfloat16/float16
// weights (slots are float32) and in double for float64 weights (slots are float64).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "osprey/core/dtype.h"

namespace osprey::optim::detail {

inline constexpr int kMaxSlots = 3;
inline constexpr int64_t kGrain = int64_t{1} << 16;      // elements per parallel piece, at least
inline constexpr int64_t kNormBlock = int64_t{1} << 16;  // fixed blocks of the norm reduction

struct VarTask;
// Updates elements [lo, hi) of one variable; params points to the optimizer's step constants.
using KernelFn = void (*)(const VarTask& task, const void* params, int64_t lo, int64_t hi);
// Sum of squares of grad[lo, hi), in double, in a fixed order.
using SumSquaresFn = double (*)(const void* grad, int64_t lo, int64_t hi);

// One variable's share of a step. Plain data, rebuilt each step in a reused vector.
struct VarTask {
  void* value = nullptr;
  const void* grad = nullptr;
  std::array<void*, kMaxSlots> slots{};  // null where the optimizer has no such slot
  int64_t begin = 0;                     // offset of element 0 in the step's flat range
  int64_t numel = 0;
  double grad_scale = 1.0;  // 1 / loss_scale_factor, times the clipnorm factor
  double clipvalue = std::numeric_limits<double>::infinity();
  double keep = 1.0;  // 1 - weight_decay * learning_rate; exactly 1 when off or excluded
  KernelFn kernel = nullptr;
  SumSquaresFn sum_squares = nullptr;
};

// Compute (and slot) type of a weight type.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class C, class T>
inline C load(T x) noexcept {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<C>(x);
  } else {
    return static_cast<C>(static_cast<float>(x));
  }
}
template <class T, class C>
inline T store(C x) noexcept {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(x);
  } else {
    return T(static_cast<float>(x));
  }
}

// K<C> is the rule: constructed from K<C>::Params (doubles), called per element as
// w = k(g, w, s0, s1, s2, i) with the slots' base pointers. The loop has no branches (options
// are template parameters of the rule; clipping is a clamp to +-inf when off; the decay factor
// is exactly 1 when off), so it vectorizes (optim builds with -fno-math-errno for sqrt).
template <template <class> class K, class T, class G>
void run_kernel(const VarTask& t, const void* params, int64_t lo, int64_t hi) {
  using C = Compute<T>;
  const K<C> k(*static_cast<const typename K<C>::Params*>(params));
  T* __restrict w = static_cast<T*>(t.value);
  const G* __restrict g = static_cast<const G*>(t.grad);
  C* __restrict s0 = static_cast<C*>(t.slots[0]);
  C* __restrict s1 = static_cast<C*>(t.slots[1]);
  C* __restrict s2 = static_cast<C*>(t.slots[2]);
  const C scale = static_cast<C>(t.grad_scale);
  const C clip_high = static_cast<C>(t.clipvalue);
  const C clip_low = -clip_high;
  const C keep = static_cast<C>(t.keep);
  for (int64_t i = lo; i < hi; ++i) {
    const C gi = std::min(std::max(load<C>(g[i]) * scale, clip_low), clip_high);
    const C wi =
        load<C>(w[i]) * keep;  // decoupled weight decay, as torch's AdamW: w * (1 - wd * lr)
    w[i] = store<T>(k(gi, wi, s0, s1, s2, i));
  }
}

template <class G>
double sum_squares(const void* grad, int64_t lo, int64_t hi) {
  const G* g = static_cast<const G*>(grad);
  double acc[4] = {0.0, 0.0, 0.0, 0.0};  // four chains: same order on every run
  int64_t i = lo;
  for (; i + 4 <= hi; i += 4) {
    for (int j = 0; j < 4; ++j) {
      const double x = load<double>(g[i + j]);
      acc[j] += x * x;
    }
  }
  for (; i < hi; ++i) {
    const double x = load<double>(g[i]);
    acc[0] += x * x;
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// True for the weight and gradient dtypes the fused loop handles.
inline bool is_update_dtype(DType d) noexcept {
  return d == DType::float64 || d == DType::float32 || d == DType::bfloat16 || d == DType::float16;
}

// Calls fn.template operator()<T>() with the element type of a float dtype (is_update_dtype).
template <class Fn>
auto visit_update_dtype(DType d, Fn&& fn) {
  switch (d) {
    case DType::float64:
      return fn.template operator()<double>();
    case DType::bfloat16:
      return fn.template operator()<bfloat16>();
    case DType::float16:
      return fn.template operator()<float16>();
    default:
      return fn.template operator()<float>();
  }
}

template <template <class> class K>
KernelFn kernel_for(DType value, DType grad) {
  return visit_update_dtype(value, [&]<class T>() {
    return visit_update_dtype(grad, [&]<class G>() -> KernelFn { return &run_kernel<K, T, G>; });
  });
}

inline SumSquaresFn sum_squares_for(DType grad) {
  return visit_update_dtype(grad, []<class G>() -> SumSquaresFn { return &sum_squares<G>; });
}

}  // namespace osprey::optim::detail
