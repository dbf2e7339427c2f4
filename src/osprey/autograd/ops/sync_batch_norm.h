// Training-mode batch norm with cross-replica statistics (BatchNormOptions::cross_replica_sum),
// internal to autograd/ops: norm.cpp checks the arguments and hands synchronized calls here.
#pragma once

#include "osprey/autograd/ops/norm.h"

namespace osprey::autograd::detail {

// The statistics dtype of batch norm on x: float32, or float64 for float64 inputs.
inline DType bn_stats_dtype(DType x) {
  return x == DType::float64 ? DType::float64 : DType::float32;
}
// v [C] reshaped to broadcast against an ndim-d x along the channel axis.
Tensor per_channel(const Tensor& v, int ndim, int axis);

// x checked, axis normalized; running_mean / running_var null or both defined and checked.
Variable sync_batch_norm_train(const Variable& x, const Variable& gamma, const Variable& beta,
                               Tensor* running_mean, Tensor* running_var, const BatchNormOptions& o,
                               int axis);

}  // namespace osprey::autograd::detail
