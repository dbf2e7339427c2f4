// Differentiable softmax and log-softmax along one axis (the backend's numerically stable
// kernels; backward reads only the saved output). bfloat16/float16 inputs are computed in
// float32 and give a float32 result (the numerically sensitive ops of mixed precision).
//   Variable p = softmax(logits);            // over the last axis
//   Variable lp = log_softmax(logits, 1);
#pragma once

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

Variable softmax(const Variable& x, int axis = -1);
Variable log_softmax(const Variable& x, int axis = -1);

}  // namespace osprey::autograd
