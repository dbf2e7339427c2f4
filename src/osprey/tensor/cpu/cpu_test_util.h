// Helpers for the fast-CPU-backend tests: seeded random tensors of any dtype and layout, element
// reads that bypass the backends (so a broken fast copy cannot hide a broken kernel), and an
// all-close check with a per-op tolerance that names the first mismatch.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "osprey/tensor/backend.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu::testing {

inline const Backend& ref() { return reference_backend(); }
inline const Backend& fast() { return cpu_backend(); }

// Every element in row-major order, read with the reference loader.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(t.numel()));
  reference::for_each_index(
      t.shape(), [&](int64_t o) { v.push_back(reference::load(t, o)); }, t);
  return v;
}

// A float32 (or d) tensor of normal(0, scale) values + shift, seeded.
inline Tensor randn(const Shape& s, uint64_t seed, double scale = 1.0, double shift = 0.0,
                    DType d = DType::float32) {
  Tensor t =
      random_normal(s, {.seed = seed, .dtype = DType::float64, .mean = shift, .stddev = scale});
  Tensor out = Tensor::empty(s, {d});
  ref().copy(t, out);
  return out;
}
inline Tensor randu(const Shape& s, uint64_t seed, double lo, double hi, DType d = DType::float32) {
  Tensor t = random_uniform(s, {.seed = seed, .dtype = DType::float64, .low = lo, .high = hi});
  Tensor out = Tensor::empty(s, {d});
  ref().copy(t, out);
  return out;
}

inline Tensor empty_as(const Tensor& t, DType d) { return Tensor::empty(t.shape(), {d}); }
inline Tensor empty_as(const Tensor& t) { return Tensor::empty(t.shape(), {t.dtype()}); }

// |a - b| <= atol + rtol * |b| for every element (NaN only matches NaN).
inline ::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, double rtol,
                                            double atol) {
  if (got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "shapes differ: " << got.shape().to_string() << " vs " << want.shape().to_string();
  }
  const std::vector<double> a = values(got), b = values(want);
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << a[i] << ", want " << b[i];
    }
    if (a[i] == b[i]) continue;  // equal infinities too
    const double err = std::fabs(a[i] - b[i]);
    if (!(err <= atol + rtol * std::fabs(b[i]))) {
      return ::testing::AssertionFailure() << "element " << i << " of " << a.size() << ": got "
                                           << a[i] << ", want " << b[i] << " (error " << err << ")";
    }
    worst = std::max(worst, err);
  }
  return ::testing::AssertionSuccess() << "max error " << worst;
}

// Bitwise equality of two tensors' elements.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  return std::memcmp(ac.raw_data(), bc.raw_data(), ac.nbytes()) == 0;
}

}  // namespace osprey::cpu::testing
