// Reference elementwise, reduction and random kernels: one element at a time, in double.
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "osprey/core/rng.h"
#include "osprey/tensor/reference/cast_value.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

double load(const Tensor& t, int64_t element_offset) {
  const char* p = static_cast<const char*>(t.storage()->data()) +
                  element_offset * static_cast<int64_t>(t.itemsize());
  return visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, p, sizeof(T));
    return to_double(v);
  });
}

void store(Tensor& t, int64_t element_offset, double v) {
  char* p =
      static_cast<char*>(t.storage()->data()) + element_offset * static_cast<int64_t>(t.itemsize());
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T x = from_double<T>(v);
    std::memcpy(p, &x, sizeof(T));
  });
}

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluC = 0.044715;

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluC * x * x * x)));
}
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x * std::numbers::sqrt2 / 2.0)); }
double gelu_tanh_grad(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + kGeluC * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kGeluC * x * x);
}
double gelu_erf_grad(double x) {
  const double cdf = 0.5 * (1.0 + std::erf(x * std::numbers::sqrt2 / 2.0));
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return cdf + x * pdf;
}

double apply_unary(UnaryOp op, double x, const UnaryParams& p) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::sqrt:
      return std::sqrt(x);
    case UnaryOp::rsqrt:
      return 1.0 / std::sqrt(x);
    case UnaryOp::abs:
      return std::fabs(x);
    case UnaryOp::sign:
      return std::isnan(x) ? x : static_cast<double>((x > 0) - (x < 0));
    case UnaryOp::square:
      return x * x;
    case UnaryOp::reciprocal:
      return 1.0 / x;
    case UnaryOp::relu:
      return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case UnaryOp::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::gelu_tanh:
      return gelu_tanh(x);
    case UnaryOp::gelu_erf:
      return gelu_erf(x);
    case UnaryOp::add_scalar:
      return x + p.alpha;
    case UnaryOp::mul_scalar:
      return x * p.alpha;
    case UnaryOp::pow_scalar:
      return std::pow(x, p.alpha);
    case UnaryOp::rsub_scalar:
      return p.alpha - x;
    case UnaryOp::clamp:
      return std::isnan(x) ? x : std::min(std::max(x, p.alpha), p.beta);
  }
  return x;
}

double apply_binary(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
    case BinaryOp::pow:
      return std::pow(a, b);
    case BinaryOp::maximum:
      return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<double>::quiet_NaN()
                                              : std::max(a, b);
    case BinaryOp::minimum:
      return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<double>::quiet_NaN()
                                              : std::min(a, b);
    case BinaryOp::eq:
      return a == b;
    case BinaryOp::ne:
      return a != b;
    case BinaryOp::lt:
      return a < b;
    case BinaryOp::le:
      return a <= b;
    case BinaryOp::gt:
      return a > b;
    case BinaryOp::ge:
      return a >= b;
    case BinaryOp::relu_backward:
      return b > 0 ? a : 0.0;
    case BinaryOp::sigmoid_backward:
      return a * b * (1.0 - b);
    case BinaryOp::tanh_backward:
      return a * (1.0 - b * b);
    case BinaryOp::gelu_tanh_backward:
      return a * gelu_tanh_grad(b);
    case BinaryOp::gelu_erf_backward:
      return a * gelu_erf_grad(b);
  }
  return 0.0;
}

// Integer division truncates as C++ (PyTorch's div on integers promotes to float, which the op
// layer does before calling here).
double finish(DType d, double v) { return cast_value(d, v); }

}  // namespace

void copy(const Tensor& src, Tensor& dst) {
  const DType d = dst.dtype();
  for_each_index(
      dst.shape(), [&](int64_t os, int64_t od) { store(dst, od, cast_value(d, load(src, os))); },
      src, dst);
}

void fill(Tensor& dst, double value) {
  const double v = cast_value(dst.dtype(), value);
  for_each_index(
      dst.shape(), [&](int64_t od) { store(dst, od, v); }, dst);
}

void unary(UnaryOp op, const Tensor& x, Tensor& y, const UnaryParams& p) {
  const DType d = y.dtype();
  for_each_index(
      x.shape(),
      [&](int64_t ox, int64_t oy) { store(y, oy, finish(d, apply_unary(op, load(x, ox), p))); }, x,
      y);
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const DType d = out.dtype();
  for_each_index(
      out.shape(),
      [&](int64_t oa, int64_t ob, int64_t oo) {
        store(out, oo, finish(d, apply_binary(op, load(a, oa), load(b, ob))));
      },
      a, b, out);
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  for_each_index(
      out.shape(),
      [&](int64_t oc, int64_t oa, int64_t ob, int64_t oo) {
        store(out, oo, load(cond, oc) != 0.0 ? load(a, oa) : load(b, ob));
      },
      cond, a, b, out);
}

void reduce(ReduceOp op, const Tensor& x, Tensor& out) {
  // View out with stride 0 on reduced axes, so every x index maps to its output slot.
  Shape st = out.strides();
  int64_t count = 1;
  for (int i = 0; i < x.ndim(); ++i) {
    if (out.shape()[i] != x.shape()[i]) {
      st[i] = 0;
      count *= x.shape()[i];
    }
  }
  const Tensor target = out.as_strided(x.shape(), st, out.offset());
  const int64_t n = out.numel();
  const double init = op == ReduceOp::max   ? -std::numeric_limits<double>::infinity()
                      : op == ReduceOp::min ? std::numeric_limits<double>::infinity()
                                            : 0.0;
  std::vector<double> acc(static_cast<size_t>(std::max<int64_t>(n, 1)), init);
  // Output slots are laid out contiguously in out, so (offset - out.offset()) indexes acc.
  for_each_index(
      x.shape(),
      [&](int64_t ox, int64_t ot) {
        const double v = load(x, ox);
        double& a = acc[static_cast<size_t>(ot - out.offset())];
        switch (op) {
          case ReduceOp::sum:
          case ReduceOp::mean:
            a += v;
            break;
          case ReduceOp::max:
            a = (std::isnan(v) || std::isnan(a)) ? std::numeric_limits<double>::quiet_NaN()
                                                 : std::max(a, v);
            break;
          case ReduceOp::min:
            a = (std::isnan(v) || std::isnan(a)) ? std::numeric_limits<double>::quiet_NaN()
                                                 : std::min(a, v);
            break;
        }
      },
      x, target);
  const DType d = out.dtype();
  for (int64_t i = 0; i < n; ++i) {
    double v = acc[static_cast<size_t>(i)];
    if (op == ReduceOp::mean) v /= static_cast<double>(count);
    store(out, out.offset() + i, finish(d, v));
  }
}

void arg_reduce(bool is_max, const Tensor& x, int axis, Tensor& out) {
  const int64_t n = x.shape()[axis];
  const int64_t step = x.strides()[axis];
  const Tensor base = x.narrow(axis, 0, 1);
  for_each_index(
      base.shape(),
      [&](int64_t ob, int64_t oo) {
        int64_t best = 0;
        double best_v = load(x, ob);
        for (int64_t i = 1; i < n && !std::isnan(best_v); ++i) {
          const double v = load(x, ob + i * step);
          if (std::isnan(v) || (is_max ? v > best_v : v < best_v)) {
            best = i;
            best_v = v;
          }
        }
        store(out, oo, static_cast<double>(best));
      },
      base, out);
}

void random(RandomKind kind, uint64_t seed, double a, double b, Tensor& dst) {
  const Philox rng(seed);
  const int64_t n = dst.numel();
  for (int64_t i = 0; i < n; ++i) {
    const auto w = rng(static_cast<uint64_t>(i));
    double v = 0;
    switch (kind) {
      case RandomKind::uniform:
        v = a + (b - a) * Philox::to_unit_double(w[0], w[1]);
        break;
      case RandomKind::normal: {
        const double u1 = 1.0 - Philox::to_unit_double(w[0], w[1]);  // (0, 1]
        const double u2 = Philox::to_unit_double(w[2], w[3]);
        v = a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
        break;
      }
      case RandomKind::bernoulli:
        v = Philox::to_unit_double(w[0], w[1]) < a ? 1.0 : 0.0;
        break;
    }
    store(dst, dst.offset() + i, v);
  }
}

}  // namespace osprey::reference
