// Helpers shared by the op files in autograd/ops/ (internal, not installed as API): input
// checks whose messages name the op, and small tensor utilities backward functions use.
#pragma once

#include <vector>

#include "osprey/autograd/node.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::autograd::detail {

// Throws ValueError "<op>: <name> is an undefined Variable" (e.g. "matmul: b is ...").
void check_input(const Variable& v, const char* op, const char* name);
// As check_input, and the value must be a floating-point tensor.
void check_float_input(const Variable& v, const char* op, const char* name);
// Both on one device, of one dtype: "<op>: dtypes differ: float32[2, 3] and float64[3]".
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);
// A 0-d tensor holding v, of t's dtype and device (broadcasts against anything).
Tensor scalar_like(const Tensor& t, double v);
// The value of an optional Variable, or null when it is undefined.
inline const Tensor* value_or_null(const Variable& v) { return v.defined() ? &v.value() : nullptr; }
// x's shape with size 1 on each of `axes`.
Shape keep_dims_shape(const Shape& x, const std::vector<int>& axes);

}  // namespace osprey::autograd::detail
