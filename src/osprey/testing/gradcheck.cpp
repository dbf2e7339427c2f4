#include "osprey/testing/gradcheck.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "osprey/autograd/ops/elementwise.h"
#include "osprey/autograd/ops/reduction.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::testing {

using autograd::Variable;

namespace {

// Element offsets (from element [0, ..., 0]) of every index of t, in row-major order.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.numel()));
  const int nd = t.ndim();
  if (t.numel() == 0) return out;
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < nd; ++d) o += idx[static_cast<size_t>(d)] * t.strides()[d];
    out.push_back(o);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < t.shape()[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

void check_input(const Variable& v, size_t i) {
  OSPREY_CHECK(v.defined(), "gradcheck: input {} is undefined", i);
  if (!v.requires_grad()) return;
  OSPREY_CHECK(v.dtype() == DType::float64, "gradcheck: input {} must be float64. Received: {}", i,
               v.value().describe());
  OSPREY_CHECK(v.is_leaf(), "gradcheck: input {} must be a leaf Variable", i);
  for (int d = 0; d < v.ndim(); ++d) {
    OSPREY_CHECK(v.value().strides()[d] != 0 || v.shape()[d] <= 1,
                 "gradcheck: input {} has overlapping elements (stride 0 on axis {} of {}); "
                 "perturbing one would perturb several",
                 i, d, v.shape().to_string());
  }
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Variable>& inputs,
                          const GradcheckOptions& options) {
  for (size_t i = 0; i < inputs.size(); ++i) check_input(inputs[i], i);
  GradcheckResult r;

  // Analytic: one backward pass of L = sum(f(x) * w).
  Tensor w;
  std::vector<Tensor> analytic(inputs.size());
  {
    autograd::EnableGradGuard enable;
    for (Variable v : inputs) {
      if (v.requires_grad()) v.zero_grad();
    }
    const Variable out = fn(inputs);
    OSPREY_CHECK(out.defined() && out.dtype() == DType::float64,
                 "gradcheck: the function must return a float64 Variable. Received: {}",
                 out.describe());
    OSPREY_CHECK(
        out.requires_grad(),
        "gradcheck: the output does not require grad: no input that requires grad reaches it");
    w = random_normal(out.shape(),
                      {.seed = options.seed, .dtype = DType::float64, .device = out.device()});
    autograd::sum(autograd::mul(out, Variable(w))).backward();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) continue;
      analytic[i] =
          inputs[i].has_grad() ? inputs[i].grad().contiguous() : zeros_like(inputs[i].value());
    }
  }

  // Numeric: central differences, one element at a time, with recording off.
  autograd::NoGradGuard no_grad;
  auto loss = [&] {
    const Variable out = fn(inputs);
    OSPREY_CHECK(out.shape() == w.shape(), "gradcheck: the output's shape changed from {} to {}",
                 w.shape().to_string(), out.shape().to_string());
    return osprey::sum(osprey::mul(out.value(), w)).item();
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    const Tensor& x = inputs[i].value();
    double* base = x.data<double>();
    const std::vector<double> a = analytic[i].to_vector<double>();
    const std::vector<int64_t> offsets = element_offsets(x);
    for (size_t e = 0; e < offsets.size(); ++e) {
      double* p = base + offsets[e];
      const double orig = *p;
      *p = orig + options.eps;
      const double up = loss();
      *p = orig - options.eps;
      const double down = loss();
      *p = orig;
      const double numeric = (up - down) / (2.0 * options.eps);
      const double err =
          std::abs(a[e] - numeric) / std::max({1.0, std::abs(a[e]), std::abs(numeric)});
      ++r.elements_checked;
      if (!(err <= r.max_error) || r.worst_input < 0) {  // NaN counts as the worst
        r.max_error =
            std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(err, r.max_error);
        r.worst_input = static_cast<int>(i);
        r.worst_element = static_cast<int64_t>(e);
        r.analytic = a[e];
        r.numeric = numeric;
      }
    }
  }
  r.ok = r.elements_checked > 0 && r.max_error <= options.tolerance;
  if (r.elements_checked == 0) {
    r.message = "gradcheck: no input requires grad: nothing was checked";
  } else {
    r.message = fmt::format(
        "gradcheck: max error {:.3g} (tolerance {:.3g}) over {} elements; worst: input {} {} "
        "element "
        "{}: analytic {:.12g} vs numeric {:.12g}",
        r.max_error, options.tolerance, r.elements_checked, r.worst_input,
        inputs[static_cast<size_t>(r.worst_input)].shape().to_string(), r.worst_element, r.analytic,
        r.numeric);
  }
  return r;
}

Tensor noncontiguous(const Tensor& t) {
  const Tensor src = t.to(DType::float64);
  int axis = -1;
  for (int d = src.ndim() - 1; d >= 0; --d) {
    if (src.shape()[d] > 1) {
      axis = d;
      break;
    }
  }
  if (axis < 0) return src.clone();
  Shape wide = src.shape();
  wide[axis] *= 2;
  Tensor buffer =
      full(wide, std::numeric_limits<double>::quiet_NaN(), {DType::float64, src.device()});
  Tensor view = buffer.slice(axis, 0, wide[axis], 2);
  view.copy_(src);
  return view;
}

Tensor randn(const Shape& shape, uint64_t seed, double mean, double stddev) {
  return random_normal(shape,
                       {.seed = seed, .dtype = DType::float64, .mean = mean, .stddev = stddev});
}

Variable grad_input(const Shape& shape, uint64_t seed, bool strided, double mean, double stddev) {
  Tensor v = randn(shape, seed, mean, stddev);
  return Variable(strided ? noncontiguous(v) : v, true);
}

}  // namespace osprey::testing
