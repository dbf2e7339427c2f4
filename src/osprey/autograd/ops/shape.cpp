// Shape ops: forward through Tensor's views or tensor/ops.h's copying ops; backward maps the
// gradient back (a reshape, the inverse permutation, or a zero tensor with the slice filled).
#include "osprey/autograd/ops/shape.h"

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

using Grads = std::vector<Tensor>;

namespace {

// A one-input op whose backward is grad_of(g, input_shape, input_dtype).
template <class Forward, class GradOf>
Variable shape_op(const char* op, const Variable& x, Forward forward, GradOf grad_of) {
  detail::check_input(x, op, "x");
  Tensor y = forward(x.value());
  if (!should_record(x)) return Variable(std::move(y));
  return make_variable(
      std::move(y), op, {x},
      [xs = x.shape(), dt = x.dtype(), grad_of](const Tensor& g, const std::vector<bool>&) {
        return Grads{grad_of(g, xs, dt)};
      });
}

Tensor reshape_back(const Tensor& g, const Shape& xs, DType) { return g.reshape(xs); }

// t reversed along axis a, as a new contiguous tensor: one slice copy per index.
Tensor flipped(const Tensor& t, int a) {
  Tensor out = Tensor::empty(t.shape(), {t.dtype(), t.device()});
  const int64_t n = t.size(a);
  for (int64_t i = 0; i < n; ++i) out.select(a, n - 1 - i).copy_(t.select(a, i));
  return out;
}

// Zeros of the input's shape with `region(dx)` (the forward's view) set to g.
template <class Region>
Tensor scatter_into_zeros(const Tensor& g, const Shape& xs, DType dt, Region region) {
  Tensor dx = zeros(xs, {dt, g.device()});
  Tensor part = region(dx);
  if (part.numel() > 0) part.copy_(g);
  return dx;
}

}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  return shape_op(
      "reshape", x, [&](const Tensor& t) { return t.reshape(shape); }, reshape_back);
}

Variable flatten(const Variable& x, int start_axis, int end_axis) {
  return shape_op(
      "flatten", x, [&](const Tensor& t) { return t.flatten(start_axis, end_axis); }, reshape_back);
}

Variable squeeze(const Variable& x, int axis) {
  return shape_op(
      "squeeze", x, [&](const Tensor& t) { return t.squeeze(axis); }, reshape_back);
}

Variable unsqueeze(const Variable& x, int axis) {
  return shape_op(
      "unsqueeze", x, [&](const Tensor& t) { return t.unsqueeze(axis); }, reshape_back);
}

Variable transpose(const Variable& x, int axis0, int axis1) {
  return shape_op(
      "transpose", x, [&](const Tensor& t) { return t.transpose(axis0, axis1); },
      [axis0, axis1](const Tensor& g, const Shape&, DType) { return g.transpose(axis0, axis1); });
}

Variable permute(const Variable& x, const std::vector<int>& axes) {
  detail::check_input(x, "permute", "x");
  Tensor y = x.value().permute(std::span<const int>(axes));
  if (!should_record(x)) return Variable(std::move(y));
  std::vector<int> inverse(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    inverse[static_cast<size_t>(normalize_axis(axes[i], x.ndim(), "permute"))] =
        static_cast<int>(i);
  }
  return make_variable(std::move(y), "permute", {x},
                       [inverse](const Tensor& g, const std::vector<bool>&) {
                         return Grads{g.permute(std::span<const int>(inverse))};
                       });
}

Variable slice(const Variable& x, int axis, int64_t start, int64_t stop, int64_t step) {
  return shape_op(
      "slice", x, [&](const Tensor& t) { return t.slice(axis, start, stop, step); },
      [=](const Tensor& g, const Shape& xs, DType dt) {
        return scatter_into_zeros(
            g, xs, dt, [&](const Tensor& dx) { return dx.slice(axis, start, stop, step); });
      });
}

Variable narrow(const Variable& x, int axis, int64_t start, int64_t length) {
  return shape_op(
      "narrow", x, [&](const Tensor& t) { return t.narrow(axis, start, length); },
      [=](const Tensor& g, const Shape& xs, DType dt) {
        return scatter_into_zeros(g, xs, dt,
                                  [&](const Tensor& dx) { return dx.narrow(axis, start, length); });
      });
}

Variable select(const Variable& x, int axis, int64_t index) {
  return shape_op(
      "select", x, [&](const Tensor& t) { return t.select(axis, index); },
      [=](const Tensor& g, const Shape& xs, DType dt) {
        return scatter_into_zeros(g, xs, dt,
                                  [&](const Tensor& dx) { return dx.select(axis, index); });
      });
}

Variable expand(const Variable& x, const Shape& shape) {
  return shape_op(
      "expand", x, [&](const Tensor& t) { return t.expand(shape); },
      [](const Tensor& g, const Shape& xs, DType) { return osprey::sum_to(g, xs); });
}

Variable concat(const std::vector<Variable>& xs, int axis) {
  OSPREY_CHECK(!xs.empty(), "concat: expected at least one Variable");
  std::vector<Tensor> values;
  values.reserve(xs.size());
  for (const Variable& v : xs) {
    detail::check_input(v, "concat", "an input");
    values.push_back(v.value());
  }
  Tensor y = osprey::concat(values, axis);
  if (!should_record(xs)) return Variable(std::move(y));
  const int a = normalize_axis(axis, y.ndim(), "concat");
  std::vector<int64_t> sizes;
  sizes.reserve(values.size());
  for (const Tensor& t : values) sizes.push_back(t.shape()[a]);
  return make_variable(std::move(y), "concat", xs,
                       [sizes, a](const Tensor& g, const std::vector<bool>& need) {
                         Grads grads(sizes.size());
                         int64_t at = 0;
                         for (size_t i = 0; i < sizes.size(); ++i) {
                           if (need[i]) grads[i] = g.narrow(a, at, sizes[i]);
                           at += sizes[i];
                         }
                         return grads;
                       });
}

Variable stack(const std::vector<Variable>& xs, int axis) {
  OSPREY_CHECK(!xs.empty(), "stack: expected at least one Variable");
  std::vector<Tensor> values;
  values.reserve(xs.size());
  for (const Variable& v : xs) {
    detail::check_input(v, "stack", "an input");
    values.push_back(v.value());
  }
  Tensor y = osprey::stack(values, axis);
  if (!should_record(xs)) return Variable(std::move(y));
  const int a = normalize_axis(axis, y.ndim(), "stack");
  return make_variable(std::move(y), "stack", xs,
                       [a, n = xs.size()](const Tensor& g, const std::vector<bool>& need) {
                         Grads grads(n);
                         for (size_t i = 0; i < n; ++i) {
                           if (need[i]) grads[i] = g.select(a, static_cast<int64_t>(i));
                         }
                         return grads;
                       });
}

std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int axis) {
  detail::check_input(x, "split", "x");
  osprey::split(x.value(), sizes, axis);  // validates sizes against the axis (views only: cheap)
  std::vector<Variable> out;
  out.reserve(sizes.size());
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, axis, at, s));
    at += s;
  }
  return out;
}

Variable pad(const Variable& x, const std::vector<std::array<int64_t, 2>>& pads, double value) {
  return shape_op(
      "pad", x, [&](const Tensor& t) { return osprey::pad(t, pads, value); },
      [pads](const Tensor& g, const Shape& xs, DType) {
        Tensor inner = g;
        for (size_t i = 0; i < pads.size(); ++i) {
          inner = inner.narrow(static_cast<int>(i), pads[i][0], xs[static_cast<int>(i)]);
        }
        return inner;
      });
}

Variable flip(const Variable& x, int axis) {
  detail::check_input(x, "flip", "x");
  const int a = normalize_axis(axis, x.ndim(), "flip");
  return shape_op(
      "flip", x, [a](const Tensor& t) { return flipped(t, a); },
      [a](const Tensor& g, const Shape&, DType) { return flipped(g, a); });
}

}  // namespace osprey::autograd
