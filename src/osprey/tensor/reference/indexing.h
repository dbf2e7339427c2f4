// Index helpers shared by the reference nn kernels (matmul, conv, pool, norm, softmax, embedding).
// They read a whole tensor of any strides and dtype into a row-major vector of doubles and write
// one back, so each kernel is plain index math on contiguous arrays, which is what makes it easy
// to trust as the oracle. Internal to tensor/reference/.
#pragma once

#include <cstdint>
#include <vector>

#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference::detail {

// Product of shape[begin, end).
inline int64_t prod(const Shape& s, int begin, int end) {
  int64_t p = 1;
  for (int d = begin; d < end; ++d) p *= s[d];
  return p;
}

// Every element of t in row-major order of its logical shape, as double.
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(t.numel()));
  for_each_index(
      t.shape(), [&](int64_t o) { v.push_back(load(t, o)); }, t);
  return v;
}

// Writes v (row-major, t.numel() values) into t, casting to t's dtype.
inline void from_doubles(const std::vector<double>& v, Tensor& t) {
  OSPREY_ASSERT(static_cast<int64_t>(v.size()) == t.numel(), "from_doubles: {} values for {}",
                v.size(), t.describe());
  size_t i = 0;
  for_each_index(
      t.shape(), [&](int64_t o) { store(t, o, v[i++]); }, t);
}

// An index value read from an int32/int64 (or any) tensor element; exact below 2^53.
inline int64_t to_index(double v) { return static_cast<int64_t>(v); }

// Row-major positions in a 4-D activation seen through logical (n, c, h, w), whichever layout the
// data has: NHWC when channels_last, else NCHW. Built from the tensor's shape.
struct Layout4 {
  int64_t n = 0, c = 0, h = 0, w = 0;
  bool channels_last = true;

  Layout4(const Shape& s, bool cl) : channels_last(cl) {
    OSPREY_ASSERT(s.ndim() == 4, "Layout4: expected a 4-D shape, got {}", s.to_string());
    n = s[0];
    c = cl ? s[3] : s[1];
    h = cl ? s[1] : s[2];
    w = cl ? s[2] : s[3];
  }
  int64_t operator()(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return channels_last ? ((in * h + ih) * w + iw) * c + ic : ((in * c + ic) * h + ih) * w + iw;
  }
  int64_t numel() const { return n * c * h * w; }
};

}  // namespace osprey::reference::detail
