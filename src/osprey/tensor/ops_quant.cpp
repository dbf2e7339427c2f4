// int8 ops: checks, casts and reshapes around the quantize_rows_int8, matmul_int8 and
// conv2d_int8 kernels.
#include "osprey/tensor/ops_quant.h"

#include "osprey/core/error.h"
#include "osprey/tensor/backend.h"
#include "osprey/tensor/ops.h"

namespace osprey {

QuantizedRows quantize_rows_int8(const Tensor& x) {
  check_floating(x, "quantize_rows_int8", "x");
  OSPREY_CHECK(x.ndim() == 2, "quantize_rows_int8: x must be 2-D [rows, features]. Received: {}",
               x.shape().to_string());
  const Tensor xc = x.to(DType::float32).contiguous();
  QuantizedRows out{Tensor::empty(x.shape(), {DType::int8, x.device()}),
                    Tensor::empty({x.size(0)}, {DType::float32, x.device()})};
  if (x.numel() == 0 && x.size(0) > 0) {
    out.scales.fill_(127.0 / 1e-7);
    return out;
  }
  if (x.numel() > 0) backend_for(x.device()).quantize_rows_int8(xc, out.values, out.scales);
  return out;
}

QuantizedRows quantize_columns_int8(const Tensor& w) {
  check_floating(w, "quantize_columns_int8", "w");
  OSPREY_CHECK(w.ndim() == 2, "quantize_columns_int8: w must be 2-D [in, out]. Received: {}",
               w.shape().to_string());
  QuantizedRows t = quantize_rows_int8(w.transpose(0, 1));
  return {t.values.transpose(0, 1).contiguous(), t.scales};
}

namespace {

// The int8 kernel of `op` has `rank` dims and one float32 scale per output (its last dim).
void check_int8_kernel(const QuantizedRows& w, int64_t rank, const char* op) {
  OSPREY_CHECK(w.values.defined() && w.values.dtype() == DType::int8 && w.values.ndim() == rank,
               "{}: the kernel must be a {}-D int8 tensor. Received: {}", op, rank,
               w.values.defined() ? w.values.describe() : "an undefined tensor");
  const int64_t n = w.values.size(-1);
  OSPREY_CHECK(w.scales.defined() && w.scales.dtype() == DType::float32 && w.scales.ndim() == 1 &&
                   w.scales.size(0) == n,
               "{}: the kernel scales must be float32 of shape [{}]. Received: {}", op, n,
               w.scales.defined() ? w.scales.describe() : "an undefined tensor");
}

// bias as contiguous float32 of shape [n], or undefined when null.
Tensor checked_bias(const Tensor* bias, int64_t n, const char* op) {
  if (bias == nullptr) return {};
  check_floating(*bias, op, "bias");
  OSPREY_CHECK(bias->ndim() == 1 && bias->size(0) == n,
               "{}: bias must have shape [{}]. Received: bias {}", op, n,
               bias->shape().to_string());
  return bias->to(DType::float32).contiguous();
}

}  // namespace

Tensor linear_int8(const Tensor& x, const QuantizedRows& w, const Tensor* bias,
                   Activation activation) {
  check_floating(x, "linear_int8", "x");
  check_int8_kernel(w, 2, "linear_int8");
  const int64_t k = w.values.size(0), n = w.values.size(1);
  OSPREY_CHECK(
      x.ndim() >= 1 && x.size(-1) == k,
      "linear_int8: x must have {} features on its last axis to match kernel {}. Received: {}", k,
      w.values.shape().to_string(), x.shape().to_string());
  const Tensor b = checked_bias(bias, n, "linear_int8");
  check_same_device({&x, &w.values, &w.scales}, "linear_int8");
  const QuantizedRows xq = quantize_rows_int8(x.reshape({-1, k}));
  Tensor out = Tensor::empty({xq.values.size(0), n}, {DType::float32, x.device()});
  backend_for(x.device())
      .matmul_int8(xq.values, xq.scales, w.values.contiguous(), w.scales.contiguous(),
                   b.defined() ? &b : nullptr, out, activation);
  Shape s = x.shape();
  s[s.ndim() - 1] = n;
  return out.view(s);
}

Tensor conv2d_int8(const Tensor& x, const QuantizedRows& w, const Tensor* bias,
                   const Conv2dOptions& o, Activation activation, const Pool2dOptions* pool) {
  check_floating(x, "conv2d_int8", "x");
  check_int8_kernel(w, 4, "conv2d_int8");
  const Conv2dParams p = resolve_conv2d(x.shape(), w.values.shape(), o);
  const Tensor b = checked_bias(bias, w.values.size(3), "conv2d_int8");
  check_same_device({&x, &w.values, &w.scales}, "conv2d_int8");
  const Shape conv_shape = conv2d_output_shape(x.shape(), w.values.shape(), p);
  Pool2dParams pp;
  if (pool != nullptr) {
    OSPREY_CHECK(activation != Activation::gelu_tanh && activation != Activation::gelu_erf,
                 "conv2d_int8: a fused max pool needs a non-decreasing activation (none, relu, "
                 "sigmoid or tanh). Received: {}",
                 activation == Activation::gelu_tanh ? "gelu_tanh" : "gelu_erf");
    pp = resolve_pool2d(conv_shape, *pool, "conv2d_int8");
    OSPREY_CHECK(pp.channels_last == p.channels_last,
                 "conv2d_int8: the fused max pool must have the convolution's data format {}. "
                 "Received: {}",
                 o.data_format, pool->data_format);
  }
  const QuantizedRows xq = quantize_rows_int8(x.reshape({x.size(0), -1}));
  Tensor y = Tensor::empty(pool != nullptr ? pool2d_output_shape(conv_shape, pp) : conv_shape,
                           {DType::float32, x.device()});
  backend_for(x.device())
      .conv2d_int8(xq.values.view(x.shape()), xq.scales, w.values.contiguous(),
                   w.scales.contiguous(), b.defined() ? &b : nullptr, y, p, activation,
                   pool != nullptr ? &pp : nullptr);
  return y;
}

}  // namespace osprey
