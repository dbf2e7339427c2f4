// Fused softmax cross-entropy from logits (the backend kernel computes the stable log-softmax
// and the loss in one pass and keeps the probabilities for backward: dlogits = p - target).
//   Variable loss = cross_entropy(logits, labels);                      // int labels [N]: sparse
//   Variable l2 = cross_entropy(logits, one_hot, {.label_smoothing = 0.1});  // float labels [N, C]
#pragma once

#include <string>

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

struct CrossEntropyOptions {
  // "mean" (Keras's "sum_over_batch_size" is accepted as its alias), "sum", or "none".
  std::string reduction = "mean";
  // Mixes the target with the uniform distribution: (1 - s) * target + s / C.
  double label_smoothing = 0.0;
};

// logits [..., C] (classes on the last axis). labels: int32/int64 class indices of the leading
// shape [...] (a trailing size-1 axis is accepted), or a float distribution of logits' shape.
// Returns a scalar, or the per-sample losses [...] for reduction "none". The loss is float32
// (float64 for float64 logits) whatever the logits' dtype. Labels get no gradient.
Variable cross_entropy(const Variable& logits, const Tensor& labels,
                       const CrossEntropyOptions& options = {});

}  // namespace osprey::autograd
