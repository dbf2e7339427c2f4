// Differentiable dtype cast: how mixed precision moves between float32 master weights and
// 16-bit computation. The gradient is cast back to the input's dtype, so a bfloat16 gradient
// accumulates into the float32 master variable.
//   Variable w16 = cast(kernel, DType::bfloat16);   // kernel: float32, requires_grad
#pragma once

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

// x itself when it already has `dtype`; both dtypes must be floating when x requires a gradient.
Variable cast(const Variable& x, DType dtype);

}  // namespace osprey::autograd
