// Tensor factories: constants, ranges, host vectors and seeded random tensors. Random tensors
// come from the counter-based Philox generator, so a seed gives the same numbers on any thread
// count.
//   Tensor w = random_normal({784, 512}, {.seed = 42, .stddev = 0.05});
//   Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2});
#pragma once

#include <cstdint>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey {

Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// [start, stop) in steps; float32 unless told.
Tensor arange(double start, double stop, double step = 1.0, TensorOptions options = {});
Tensor arange(int64_t stop, TensorOptions options = {DType::int64});

// Copies host values into a tensor of the given shape (default 1-D); numel must match.
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                   Device device = Device::cpu(0)) {
  const Shape s =
      shape.empty() && values.size() != 1 ? Shape{static_cast<int64_t>(values.size())} : shape;
  OSPREY_CHECK(s.numel() == static_cast<int64_t>(values.size()),
               "from_vector: {} values do not fill shape {} ({} elements)", values.size(),
               s.to_string(), s.numel());
  Tensor t = Tensor::empty(s, {dtype_of<T>(), device});
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}
template <class T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, Shape{static_cast<int64_t>(values.size())});
}

struct RandomOptions {
  uint64_t seed = 0;
  DType dtype = DType::float32;
  Device device = Device::cpu(0);
  double mean = 0.0, stddev = 1.0;  // random_normal
  double low = 0.0, high = 1.0;     // random_uniform
};
Tensor random_normal(const Shape& shape, RandomOptions options = {});
Tensor random_uniform(const Shape& shape, RandomOptions options = {});
// 1 with probability p, else 0, in options.dtype.
Tensor random_bernoulli(const Shape& shape, double p, RandomOptions options = {});

}  // namespace osprey
