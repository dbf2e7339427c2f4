#include "osprey/autograd/ops/reduction.h"

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

using Grads = std::vector<Tensor>;

namespace {

// g (reduced shape, keepdims or not) seen with size 1 on the reduced axes, ready to broadcast.
Tensor with_kept_dims(const Tensor& g, const Shape& kept) { return g.reshape(kept); }

Variable reduce_op(ReduceOp op, const char* name, const Variable& x, const std::vector<int>& axes,
                   bool keepdims) {
  detail::check_input(x, name, "x");
  Tensor y = osprey::reduce(op, x.value(), axes, keepdims);
  if (!should_record(x)) return Variable(std::move(y));
  const std::vector<int> ax = normalize_axes(axes, x.ndim(), name);
  const Shape xs = x.shape();
  const Shape kept = detail::keep_dims_shape(xs, ax);
  BackwardFn fn;
  if (op == ReduceOp::sum) {
    fn = [xs, kept](const Tensor& g, const std::vector<bool>&) {
      return Grads{with_kept_dims(g, kept).expand(xs)};
    };
  } else if (op == ReduceOp::mean) {
    const double count = kept.numel() == 0 ? 1.0 : static_cast<double>(xs.numel()) / kept.numel();
    fn = [xs, kept, count](const Tensor& g, const std::vector<bool>&) {
      return Grads{osprey::mul(with_kept_dims(g, kept), 1.0 / count).expand(xs)};
    };
  } else {
    // Ties share the gradient: mask / (number of tied elements).
    fn = [xv = x.value(), yk = y.reshape(kept), ax, kept](const Tensor& g,
                                                          const std::vector<bool>&) {
      const Tensor mask = osprey::eq(xv, yk).to(xv.dtype());
      const Tensor ties = osprey::sum(mask, ax, true);
      const Tensor share = osprey::div(with_kept_dims(g, kept), ties);
      return Grads{osprey::mul(mask, share)};
    };
  }
  return make_variable(std::move(y), name, {x}, std::move(fn));
}

}  // namespace

Variable sum(const Variable& x, const std::vector<int>& axes, bool keepdims) {
  return reduce_op(ReduceOp::sum, "sum", x, axes, keepdims);
}
Variable mean(const Variable& x, const std::vector<int>& axes, bool keepdims) {
  return reduce_op(ReduceOp::mean, "mean", x, axes, keepdims);
}
Variable max(const Variable& x, const std::vector<int>& axes, bool keepdims) {
  return reduce_op(ReduceOp::max, "max", x, axes, keepdims);
}
Variable min(const Variable& x, const std::vector<int>& axes, bool keepdims) {
  return reduce_op(ReduceOp::min, "min", x, axes, keepdims);
}

Variable sum_to(const Variable& x, const Shape& shape) {
  detail::check_input(x, "sum_to", "x");
  Tensor y = osprey::sum_to(x.value(), shape);
  if (!should_record(x)) return Variable(std::move(y));
  return make_variable(
      std::move(y), "sum_to", {x},
      [xs = x.shape()](const Tensor& g, const std::vector<bool>&) { return Grads{g.expand(xs)}; });
}

Tensor argmax(const Variable& x, int axis, bool keepdims) {
  detail::check_input(x, "argmax", "x");
  return osprey::argmax(x.value(), axis, keepdims);
}

Tensor argmin(const Variable& x, int axis, bool keepdims) {
  detail::check_input(x, "argmin", "x");
  return osprey::argmin(x.value(), axis, keepdims);
}

}  // namespace osprey::autograd
