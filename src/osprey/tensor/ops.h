// The tensor op API without gradients: shape and dtype checks, broadcasting and type promotion,
// output allocation, then one call into the device's Backend table (backend.h). autograd/ builds
// differentiable ops on these; user code that needs no gradient can call them directly.
// Every op checks its inputs and throws ValueError naming the op and the shapes/dtypes involved,
// e.g. "matmul: inner dimensions differ: [128, 784] x [512, 256]".
#pragma once

#include <array>
#include <string>
#include <vector>

#include "osprey/tensor/backend.h"
#include "osprey/tensor/tensor.h"

namespace osprey {

// Elementwise, broadcasting, with PyTorch type promotion (integer inputs to div/pow/exp...
// give float32).
Tensor unary_op(UnaryOp op, const Tensor& x, UnaryParams params = {});
Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x, bool approximate_tanh = false);
Tensor clamp(const Tensor& x, double low, double high);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// Casts both to their promoted dtype and broadcasts them to a common shape.
std::pair<Tensor, Tensor> broadcast_pair(const Tensor& a, const Tensor& b, const char* op);

// Reductions over `axes` (empty = all axes). An empty reduction (a reduced axis of size 0) is
// an error for max/min/mean, and gives 0 for sum.
Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes = {},
              bool keepdims = false);
Tensor sum(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor argmax(const Tensor& x, int axis, bool keepdims = false);
Tensor argmin(const Tensor& x, int axis, bool keepdims = false);
// Sums a broadcast result back to `shape` (the gradient of expand).
Tensor sum_to(const Tensor& x, const Shape& shape);

// Matrix products. matmul broadcasts batch dims like NumPy; 1-D operands are promoted as NumPy.
Tensor matmul(const Tensor& a, const Tensor& b);
// x [..., in] · w [in, out] (+ b [out]) -> [..., out], with an optional fused activation.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias = nullptr,
              Activation activation = Activation::none);

// int8 inference (the scheme quant/ builds on; kernels in backend.h). quantize_rows_int8:
// x [M, K] float -> int8 values and float32 scales [M] with the seeds' per-row abs-max formula
// scale = 127 / (max|x| + 1e-7), q = clip(round(x * scale), -127, 127); x ~ q / scale.
struct QuantizedRows {
  Tensor values;  // [M, K] int8
  Tensor scales;  // [M] float32
};
QuantizedRows quantize_rows_int8(const Tensor& x);
// Per-output-channel weights: w [K, N] float -> values [K, N] int8 and scales [N] float32, the
// same formula over each column.
QuantizedRows quantize_columns_int8(const Tensor& w);
// x [..., K] float · w (int8 [K, N] with scales [N]) (+ bias [N]) -> float32 [..., N]: x is
// quantized per row, multiplied as int8 x int8 -> int32, dequantized by 1 / (x_scale * w_scale).
Tensor linear_int8(const Tensor& x, const QuantizedRows& w, const Tensor* bias = nullptr,
                   Activation activation = Activation::none);

// Convolution and pooling. padding: "valid", "same", or "explicit" with pads
// {top, bottom, left, right}; data_format "NHWC" (default, Keras) or "NCHW".
struct Conv2dOptions {
  std::array<int64_t, 2> strides{1, 1};
  std::string padding = "valid";
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  std::string data_format = "NHWC";
};
struct Pool2dOptions {
  std::array<int64_t, 2> pool_size{2, 2};
  std::array<int64_t, 2> strides{0, 0};  // 0 = pool_size, as Keras
  std::string padding = "valid";
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::string data_format = "NHWC";
};
// Validates the options against the shapes (x, kernel [kh, kw, in/groups, out]) and resolves them.
Conv2dParams resolve_conv2d(const Shape& x, const Shape& w, const Conv2dOptions& o);
Pool2dParams resolve_pool2d(const Shape& x, const Pool2dOptions& o, const char* op);
Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p);
Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p);

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dParams& p);
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                            const Conv2dParams& p);
// Returns dw; writes dbias when non-null.
Tensor conv2d_backward_weights(const Tensor& dy, const Tensor& x, const Shape& w_shape,
                               Tensor* dbias, const Conv2dParams& p);
Tensor max_pool2d(const Tensor& x, const Pool2dParams& p, Tensor* workspace = nullptr);
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace,
                           const Pool2dParams& p);
Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p);
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dParams& p);

Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);

// Shape ops that copy.
Tensor concat(const std::vector<Tensor>& tensors, int axis = 0);
Tensor stack(const std::vector<Tensor>& tensors, int axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis = 0);
// pads: {before, after} per axis, for the leading axes given (like numpy.pad's pairs).
Tensor pad(const Tensor& x, const std::vector<std::array<int64_t, 2>>& pads, double value = 0.0);

// Fails with ValueError naming op unless every tensor is defined, on one device, and (when
// same_dtype) of one dtype.
void check_same_device(const std::vector<const Tensor*>& ts, const char* op);
void check_defined(const Tensor& t, const char* op, const char* name);
void check_floating(const Tensor& t, const char* op, const char* name);

}  // namespace osprey
