// Differentiable matrix products.
//   matmul: NumPy semantics: batch dims broadcast, a 1-D operand is a row (a) or column (b)
//     vector that is dropped from the result. Broadcast batch dims are summed back in backward.
//   linear: x [..., in] · kernel [in, out] (+ bias [out]), then an optional activation fused
//     into the product (relu, sigmoid and tanh back-propagate from the fused output; the gelus
//     need the pre-activation and so run as a separate op).
//   Variable h = linear(x, w, b, Activation::relu);   // x [32, 784], w [784, 128] -> [32, 128]
#pragma once

#include "osprey/autograd/variable.h"
#include "osprey/tensor/backend.h"

namespace osprey::autograd {

Variable matmul(const Variable& a, const Variable& b);
// bias may be an undefined Variable (no bias).
Variable linear(const Variable& x, const Variable& kernel, const Variable& bias = {},
                Activation activation = Activation::none);

}  // namespace osprey::autograd
