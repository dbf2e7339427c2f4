// Differentiable 2-D convolution. Data NHWC (Keras's default) or NCHW via
// Conv2dOptions::data_format; the kernel is always [kh, kw, in_channels / groups, filters]
// (Keras's HWIO). Strides, "valid" / "same" / explicit padding, dilation and groups are resolved
// by resolve_conv2d (tensor/ops.h), which also checks the shapes.
//   Variable y = conv2d(x, w, b, {.strides = {2, 2}, .padding = "same"});  // x [N, H, W, C]
#pragma once

#include "osprey/autograd/variable.h"
#include "osprey/tensor/ops.h"

namespace osprey::autograd {

// bias [filters] may be an undefined Variable.
Variable conv2d(const Variable& x, const Variable& kernel, const Variable& bias,
                const Conv2dOptions& options = {});
Variable conv2d(const Variable& x, const Variable& kernel, const Conv2dOptions& options = {});
// With already resolved geometry. params.activation (none, relu, sigmoid or tanh; ValueError
// otherwise) is applied in the kernel and differentiated from the output, like linear's.
Variable conv2d(const Variable& x, const Variable& kernel, const Variable& bias,
                const Conv2dParams& params);

}  // namespace osprey::autograd
