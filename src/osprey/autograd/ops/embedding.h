// Differentiable embedding lookup: rows of a table gathered by integer indices; backward
// scatter-adds the gradient rows into a zero table (repeated indices accumulate).
//   Variable e = embedding(table, token_ids);   // table [V, D], ids int64 [B, T] -> [B, T, D]
#pragma once

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

// indices: int32 or int64 of any shape, each in [0, V); the result is indices.shape() + [D].
Variable embedding(const Variable& table, const Tensor& indices);

}  // namespace osprey::autograd
