// Differentiable activations. Backward uses the fused BinaryOp::*_backward kernels: relu and
// gelu read the input, sigmoid and tanh their output (so only one tensor is saved).
//   Variable h = gelu(linear(x, w, b), /*approximate_tanh=*/true);
#pragma once

#include "osprey/autograd/variable.h"
#include "osprey/tensor/backend.h"

namespace osprey::autograd {

// Gradient 0 at x == 0, as PyTorch and TensorFlow.
Variable relu(const Variable& x);
// erf form x * Phi(x) by default; tanh approximation when approximate_tanh (Keras's approximate).
Variable gelu(const Variable& x, bool approximate_tanh = false);
Variable sigmoid(const Variable& x);
Variable tanh(const Variable& x);
// x * sigmoid(x) (Keras's silu, also named swish): composed of sigmoid and mul, so backward keeps
// x and sigmoid(x).
Variable silu(const Variable& x);
// Applies one of the activations linear/conv can fuse; Activation::none returns x.
Variable activation(const Variable& x, Activation a);

}  // namespace osprey::autograd
