// Differentiable shape ops. reshape (when strides allow), flatten, transpose, permute, slice,
// narrow, select, expand, squeeze and unsqueeze return views that share the input's storage;
// concat, stack, pad and flip copy. Every backward maps the gradient back onto the input's shape
// (a slice's gradient is zero outside the slice; an expand's is summed back).
//   Variable xt = transpose(x, 0, 1);             // view
//   auto parts = split(h, {64, 64}, -1);          // two views of h
#pragma once

#include <array>
#include <vector>

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

Variable reshape(const Variable& x, const Shape& shape);  // one -1 is inferred
Variable flatten(const Variable& x, int start_axis = 0, int end_axis = -1);
Variable transpose(const Variable& x, int axis0, int axis1);
Variable permute(const Variable& x, const std::vector<int>& axes);
// Python-style bounds (negative counts from the end, clamped), step > 0.
Variable slice(const Variable& x, int axis, int64_t start, int64_t stop, int64_t step = 1);
Variable narrow(const Variable& x, int axis, int64_t start, int64_t length);
Variable select(const Variable& x, int axis, int64_t index);  // drops the axis
Variable expand(const Variable& x, const Shape& shape);
Variable squeeze(const Variable& x, int axis);
Variable unsqueeze(const Variable& x, int axis);

Variable concat(const std::vector<Variable>& xs, int axis = 0);
Variable stack(const std::vector<Variable>& xs, int axis = 0);
// Pieces of the given sizes along axis (they must add up to its size).
std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int axis = 0);
// pads: {before, after} for each leading axis given (numpy.pad's pairs), filled with value.
Variable pad(const Variable& x, const std::vector<std::array<int64_t, 2>>& pads,
             double value = 0.0);
// x with the order along axis reversed (numpy.flip; Keras's Bidirectional re-reverses the
// backward layer's outputs in time with it). Its gradient is the gradient flipped back.
Variable flip(const Variable& x, int axis);

}  // namespace osprey::autograd
