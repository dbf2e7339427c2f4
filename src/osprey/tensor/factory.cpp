#include "osprey/tensor/factory.h"

#include <cmath>

#include "osprey/tensor/backend.h"

namespace osprey {

Tensor full(const Shape& shape, double value, TensorOptions options) {
  Tensor t = Tensor::empty(shape, options);
  t.fill_(value);
  return t;
}
Tensor zeros(const Shape& shape, TensorOptions options) { return full(shape, 0.0, options); }
Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1.0, options); }
Tensor empty_like(const Tensor& t) { return Tensor::empty(t.shape(), {t.dtype(), t.device()}); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), {t.dtype(), t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), {t.dtype(), t.device()}); }

Tensor arange(double start, double stop, double step, TensorOptions options) {
  OSPREY_CHECK(step != 0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(stop),
               "arange: start, stop and step must be finite and step non-zero. Received: start={}, "
               "stop={}, step={}",
               start, stop, step);
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
  Tensor t = Tensor::empty({n}, options);
  for (int64_t i = 0; i < n; ++i) t.set({i}, start + static_cast<double>(i) * step);
  return t;
}

Tensor arange(int64_t stop, TensorOptions options) {
  return arange(0.0, static_cast<double>(stop), 1.0, options);
}

namespace {
Tensor random_tensor(const Shape& shape, RandomKind kind, double a, double b,
                     const RandomOptions& o) {
  OSPREY_CHECK(is_floating(o.dtype) || kind == RandomKind::bernoulli,
               "random: dtype must be floating point. Received: {}", dtype_name(o.dtype));
  Tensor t = Tensor::empty(shape, {o.dtype, o.device});
  backend_for(o.device).random(kind, o.seed, a, b, t);
  return t;
}
}  // namespace

Tensor random_normal(const Shape& shape, RandomOptions options) {
  OSPREY_CHECK(options.stddev >= 0, "random_normal: stddev must be non-negative. Received: {}",
               options.stddev);
  return random_tensor(shape, RandomKind::normal, options.mean, options.stddev, options);
}

Tensor random_uniform(const Shape& shape, RandomOptions options) {
  OSPREY_CHECK(options.low <= options.high,
               "random_uniform: low must not exceed high. Received: low={}, high={}", options.low,
               options.high);
  return random_tensor(shape, RandomKind::uniform, options.low, options.high, options);
}

Tensor random_bernoulli(const Shape& shape, double p, RandomOptions options) {
  OSPREY_CHECK(p >= 0 && p <= 1, "random_bernoulli: p must be in [0, 1]. Received: {}", p);
  return random_tensor(shape, RandomKind::bernoulli, p, 0.0, options);
}

}  // namespace osprey
