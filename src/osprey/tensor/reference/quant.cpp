// Reference int8 kernels: per-row abs-max quantization and the int8 x int8 -> int32 product
// with its float32 dequantization, written as the Backend contract in backend.h states them
// (float32 arithmetic where the contract says so, so the fast kernels can match them exactly).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

void quantize_rows_int8(const Tensor& x, Tensor& q, Tensor& scale) {
  const int64_t m = x.shape()[0], k = x.shape()[1];
  const float* xp = x.data<float>();
  int8_t* qp = q.data<int8_t>();
  float* sp = scale.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    const float* row = xp + i * k;
    float amax = 0.0f;
    for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(row[j]));
    const float s = 127.0f / (amax + 1e-7f);
    sp[i] = s;
    for (int64_t j = 0; j < k; ++j) {
      const float v = std::rint(row[j] * s);  // round half to even (the default rounding mode)
      qp[i * k + j] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

void matmul_int8(const Tensor& a_q, const Tensor& a_scale, const Tensor& b_q, const Tensor& b_scale,
                 const Tensor* bias, Tensor& out, Activation activation) {
  const int64_t m = a_q.shape()[0], k = a_q.shape()[1], n = b_q.shape()[1];
  const int8_t* a = a_q.data<int8_t>();
  const int8_t* b = b_q.data<int8_t>();
  const float* sa = a_scale.data<float>();
  const float* sb = b_scale.data<float>();
  const float* bp = bias != nullptr ? bias->data<float>() : nullptr;
  float* o = out.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    const float ra = 1.0f / sa[i];
    for (int64_t j = 0; j < n; ++j) {
      int32_t acc = 0;
      for (int64_t t = 0; t < k; ++t) acc += int32_t{a[i * k + t]} * int32_t{b[t * n + j]};
      const float deq = static_cast<float>(acc) * (ra * (1.0f / sb[j]));
      o[i * n + j] = bp != nullptr ? deq + bp[j] : deq;
    }
  }
  if (activation != Activation::none) unary(unary_op_of(activation), out, out, {});
}

namespace {
// The spatial size of conv2d(x, w) along one axis.
int64_t conv_out(int64_t in, int64_t pad, int64_t k, int64_t dilation, int64_t stride) {
  return (in + pad - dilation * (k - 1) - 1) / stride + 1;
}
}  // namespace

void conv2d_int8(const Tensor& x_q, const Tensor& x_scale, const Tensor& w_q, const Tensor& w_scale,
                 const Tensor* bias, Tensor& y, const Conv2dParams& p, Activation activation,
                 const Pool2dParams* pool) {
  if (pool != nullptr) {
    // The contract's order, unfused: the convolution's float32 output, then the pooling.
    const Shape& xs = x_q.shape();
    const Shape& ws = w_q.shape();
    const int64_t h = p.channels_last ? xs[1] : xs[2], w = p.channels_last ? xs[2] : xs[3];
    const int64_t oh = conv_out(h, p.pad_top + p.pad_bottom, ws[0], p.dilation_h, p.stride_h);
    const int64_t ow = conv_out(w, p.pad_left + p.pad_right, ws[1], p.dilation_w, p.stride_w);
    Tensor full =
        Tensor::empty(p.channels_last ? Shape{xs[0], oh, ow, ws[3]} : Shape{xs[0], ws[3], oh, ow},
                      {DType::float32});
    conv2d_int8(x_q, x_scale, w_q, w_scale, bias, full, p, activation, nullptr);
    max_pool2d_forward(full, y, nullptr, *pool);
    return;
  }
  // The integer sums through the reference convolution, which accumulates in double: exact for
  // int8 operands up to 2^53 / 127^2 taps.
  Tensor acc = Tensor::empty(y.shape(), {DType::float64});
  Conv2dParams sums = p;
  sums.activation = Activation::none;  // the activation comes after the dequantization
  conv2d_forward(x_q, w_q, nullptr, acc, sums);
  const Shape& s = y.shape();
  const int64_t c = p.channels_last ? s[3] : s[1], per_sample = s[1] * s[2] * s[3];
  const int64_t hw = s[2] * s[3];  // NCHW: a channel's plane
  const double* a = acc.data<double>();
  const float* sa = x_scale.data<float>();
  const float* sb = w_scale.data<float>();
  const float* bp = bias != nullptr ? bias->data<float>() : nullptr;
  float* o = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t n = i / per_sample, ch = p.channels_last ? i % c : (i / hw) % c;
    const float deq = static_cast<float>(a[i]) * ((1.0f / sa[n]) * (1.0f / sb[ch]));
    o[i] = bp != nullptr ? deq + bp[ch] : deq;
  }
  if (activation != Activation::none) unary(unary_op_of(activation), y, y, {});
}

}  // namespace osprey::reference
