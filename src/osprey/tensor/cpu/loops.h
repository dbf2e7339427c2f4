// Loop plans for the vectorized elementwise kernels: the operands' dims are collapsed (size-1
// dims dropped, adjacent dims merged where every operand's strides allow) until the innermost
// dim is a unit-stride run for the output and a unit-stride or broadcast (stride 0) run for each
// input. The element range is then cut into chunks of kGrain elements run by parallel_for, each
// chunk walking whole or partial innermost runs; a run is handed to a kernel as plain pointers,
// so the kernel is a simple loop the compiler vectorizes. Internal to tensor/cpu/.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "osprey/core/parallel.h"
#include "osprey/tensor/tensor.h"

namespace osprey::cpu {

// Elements per parallel chunk: large enough that a chunk costs far more than waking a thread.
inline constexpr int64_t kGrain = 32768;

template <int N>
struct LoopPlan {
  int nd = 0;  // collapsed dims, innermost last
  std::array<int64_t, kMaxDims> size{};
  std::array<std::array<int64_t, kMaxDims>, N> stride{};  // in elements, per operand
  int64_t numel = 0;
  // True when the innermost dim is unit-stride for operand 0 and unit or 0 for the others.
  bool vectorizable = false;
  int64_t inner() const { return nd == 0 ? 1 : size[static_cast<size_t>(nd - 1)]; }
  int64_t inner_stride(int op) const {
    return nd == 0 ? 0 : stride[static_cast<size_t>(op)][static_cast<size_t>(nd - 1)];
  }
};

// ops[0] is the output; every operand has `shape` (inputs already expanded to it).
template <int N>
LoopPlan<N> make_plan(const Shape& shape, const std::array<const Tensor*, N>& ops) {
  LoopPlan<N> p;
  p.numel = shape.numel();
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == 1) continue;
    const auto k = static_cast<size_t>(p.nd);
    bool merge = p.nd > 0;
    for (int o = 0; o < N && merge; ++o) {
      merge = p.stride[static_cast<size_t>(o)][k - 1] ==
              ops[static_cast<size_t>(o)]->strides()[d] * shape[d];
    }
    if (merge) {
      p.size[k - 1] *= shape[d];
      for (int o = 0; o < N; ++o)
        p.stride[static_cast<size_t>(o)][k - 1] = ops[static_cast<size_t>(o)]->strides()[d];
    } else {
      p.size[k] = shape[d];
      for (int o = 0; o < N; ++o)
        p.stride[static_cast<size_t>(o)][k] = ops[static_cast<size_t>(o)]->strides()[d];
      ++p.nd;
    }
  }
  p.vectorizable = p.nd == 0 || p.inner_stride(0) == 1;
  for (int o = 1; o < N && p.vectorizable; ++o) {
    const int64_t s = p.inner_stride(o);
    p.vectorizable = s == 0 || s == 1;
  }
  return p;
}

// Calls run(ptrs, n, steps) for consecutive innermost runs covering every element, in
// parallel chunks of kGrain elements. ptrs[o] points at the run's first element of operand o
// (bytes: base[o] + offset * itemsize[o]); steps[o] is the operand's innermost stride in
// elements (0 or 1 for a vectorizable plan).
template <int N, class Run>
void for_each_run(const LoopPlan<N>& p, const std::array<char*, N>& base,
                  const std::array<int64_t, N>& itemsize, Run&& run, int64_t grain = kGrain) {
  if (p.numel == 0) return;
  const int64_t inner = p.inner();
  std::array<int64_t, N> steps{};
  for (int o = 0; o < N; ++o) steps[static_cast<size_t>(o)] = p.inner_stride(o);
  parallel_for(0, p.numel, grain, [&](int64_t begin, int64_t end) {
    int64_t pos = begin;
    while (pos < end) {
      const int64_t outer = pos / inner, i0 = pos % inner;
      const int64_t n = std::min(inner - i0, end - pos);
      std::array<char*, N> ptr;
      for (int o = 0; o < N; ++o) {
        const auto os = static_cast<size_t>(o);
        int64_t off = i0 * steps[os];
        int64_t rest = outer;
        for (int d = p.nd - 2; d >= 0; --d) {
          const auto ds = static_cast<size_t>(d);
          off += (rest % p.size[ds]) * p.stride[os][ds];
          rest /= p.size[ds];
        }
        ptr[os] = base[os] + off * itemsize[os];
      }
      run(ptr, n, steps);
      pos += n;
    }
  });
}

// Address of a tensor's element [0, ..., 0] as bytes.
inline char* bytes_of(const Tensor& t) { return static_cast<char*>(t.raw_data()); }

}  // namespace osprey::cpu
