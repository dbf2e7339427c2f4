// Differentiable reductions over a set of axes ({} = every axis), with keepdims.
// max/min: the gradient is shared evenly among the elements that tie for the extremum (as
// PyTorch's amax/amin), so it is well defined and the sum over the window is the incoming gradient.
//   Variable loss = mean(square(y - t));              // scalar
//   Variable m = max(x, {1}, /*keepdims=*/true);      // [N, 1]
#pragma once

#include <vector>

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

Variable sum(const Variable& x, const std::vector<int>& axes = {}, bool keepdims = false);
Variable mean(const Variable& x, const std::vector<int>& axes = {}, bool keepdims = false);
Variable max(const Variable& x, const std::vector<int>& axes = {}, bool keepdims = false);
Variable min(const Variable& x, const std::vector<int>& axes = {}, bool keepdims = false);
// Sums a broadcast Variable back to `shape` (the gradient of expand, as an op).
Variable sum_to(const Variable& x, const Shape& shape);

// Not differentiable: int64 indices (ties: the first index).
Tensor argmax(const Variable& x, int axis, bool keepdims = false);
Tensor argmin(const Variable& x, int axis, bool keepdims = false);

}  // namespace osprey::autograd
