// The int8 convolution op (quantized Conv2D); the int8 quantize and linear ops it builds on,
// QuantizedRows and quantize_columns_int8, are in ops.h. Kernels in backend.h (conv2d_int8).
#pragma once

#include "osprey/tensor/ops.h"

namespace osprey {

// x [N, H, W, C] (or NCHW) float is quantized per sample (each sample's abs-max over its
// H * W * C values, the per-row formula), w is an int8 HWIO kernel with one scale per output
// channel (quantize_columns_int8 of w.reshape({-1, out}), reshaped back); int8 x int8 -> int32,
// dequantized by 1 / (x_scale[n] * w_scale[o]), + bias, activation -> float32.
// With pool, the result is max_pool2d of that (same data format), computed without the
// unpooled float32 tensor: the maximum is taken over the int32 sums, which is exact for the
// non-decreasing activations only (none, relu, sigmoid, tanh; ValueError for the others).
Tensor conv2d_int8(const Tensor& x, const QuantizedRows& w, const Tensor* bias,
                   const Conv2dOptions& o, Activation activation = Activation::none,
                   const Pool2dOptions* pool = nullptr);

}  // namespace osprey
