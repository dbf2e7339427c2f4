// align_targets: Keras's squeeze_or_expand_to_same_rank for y_true against y_pred, the one rule
// losses and metrics share (both level 3, neither may include the other, so it lives here in
// tensor, the lowest module both include). Internal to osprey, hence detail.
//   detail::align_targets(y_true /* [32] */, Shape{32, 1}, "MeanSquaredError")  // a [32, 1] view
#pragma once

#include "osprey/tensor/tensor.h"

namespace osprey::detail {

// y_true viewed with y_pred's shape when the two differ only by a trailing axis of size 1 ([N]
// against [N, 1] either way); otherwise ValueError "<who>: y_true and y_pred must have the same
// shape. Received: y_true.shape=[...], y_pred.shape=[...]", who naming the loss or metric.
Tensor align_targets(const Tensor& y_true, const Shape& pred, const char* who);

}  // namespace osprey::detail
