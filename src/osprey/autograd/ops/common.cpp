#include "osprey/autograd/ops/common.h"

#include "osprey/core/trace.h"

namespace osprey::autograd::detail {

void check_input(const Variable& v, const char* op, const char* name) {
  // Every op checks its inputs first: the start of its forward span (make_variable ends it).
  trace::mark_op_start();
  OSPREY_CHECK(v.defined(), "{}: {} is an undefined Variable", op, name);
}

void check_float_input(const Variable& v, const char* op, const char* name) {
  check_input(v, op, name);
  check_floating(v.value(), op, name);
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  check_same_device({&a, &b}, op);
  OSPREY_CHECK(a.dtype() == b.dtype(), "{}: dtypes differ: {} and {}", op, a.describe(),
               b.describe());
}

Tensor scalar_like(const Tensor& t, double v) { return full(Shape{}, v, {t.dtype(), t.device()}); }

Shape keep_dims_shape(const Shape& x, const std::vector<int>& axes) {
  Shape s = x;
  for (int a : axes) s[a] = 1;
  return s;
}

}  // namespace osprey::autograd::detail
