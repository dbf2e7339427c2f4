// Differentiable 2-D pooling, NHWC (default) or NCHW. Window, strides (0 = the window, as
// Keras) and padding come from Pool2dOptions, resolved by resolve_pool2d (tensor/ops.h).
// max_pool2d sends each window's gradient to its maximum (the backend's choice among ties, the
// first in the window for the reference kernels); avg_pool2d divides by the number of real,
// unpadded elements.
//   Variable y = max_pool2d(x, {.pool_size = {2, 2}});          // [N, H, W, C] -> [N, H/2, W/2, C]
//   Variable v = global_average_pool2d(x);                      // [N, C]
#pragma once

#include <string>

#include "osprey/autograd/variable.h"
#include "osprey/tensor/ops.h"

namespace osprey::autograd {

Variable max_pool2d(const Variable& x, const Pool2dOptions& options = {});
Variable avg_pool2d(const Variable& x, const Pool2dOptions& options = {});
// The mean over the spatial axes: [N, C] (or [N, 1, 1, C] / [N, C, 1, 1] with keepdims).
Variable global_average_pool2d(const Variable& x, const std::string& data_format = "NHWC",
                               bool keepdims = false);
Variable global_max_pool2d(const Variable& x, const std::string& data_format = "NHWC",
                           bool keepdims = false);

}  // namespace osprey::autograd
