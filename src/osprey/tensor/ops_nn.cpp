// Convolution, pooling and softmax ops: option resolution (valid/same/explicit padding, data
// formats), shape checks, allocation and the Backend call.
#include <algorithm>

#include "osprey/tensor/ops.h"

namespace osprey {

namespace {

bool parse_format(const std::string& f, const char* op) {
  OSPREY_CHECK(f == "NHWC" || f == "NCHW" || f == "channels_last" || f == "channels_first",
               "{}: data_format must be 'NHWC' or 'NCHW'. Received: '{}'", op, f);
  return f == "NHWC" || f == "channels_last";
}

// TF's "same": output = ceil(in / stride), the extra padding going to the end.
void resolve_padding(const std::string& padding, const std::array<int64_t, 4>& pads, int64_t in_h,
                     int64_t in_w, int64_t k_h, int64_t k_w, int64_t s_h, int64_t s_w, int64_t d_h,
                     int64_t d_w, std::array<int64_t, 4>& out, const char* op) {
  if (padding == "valid") {
    out = {0, 0, 0, 0};
  } else if (padding == "same") {
    auto total = [](int64_t in, int64_t k, int64_t s, int64_t d) {
      const int64_t o = (in + s - 1) / s;
      return std::max<int64_t>((o - 1) * s + (k - 1) * d + 1 - in, 0);
    };
    const int64_t th = total(in_h, k_h, s_h, d_h), tw = total(in_w, k_w, s_w, d_w);
    out = {th / 2, th - th / 2, tw / 2, tw - tw / 2};
  } else if (padding == "explicit") {
    for (int64_t p : pads) {
      OSPREY_CHECK(p >= 0, "{}: explicit pads must be non-negative. Received: [{}, {}, {}, {}]", op,
                   pads[0], pads[1], pads[2], pads[3]);
    }
    out = pads;
  } else {
    OSPREY_THROW(ValueError, "{}: padding must be 'valid', 'same' or 'explicit'. Received: '{}'",
                 op, padding);
  }
}

int64_t out_size(int64_t in, int64_t pad, int64_t k, int64_t s, int64_t d) {
  return (in + pad - d * (k - 1) - 1) / s + 1;
}

}  // namespace

Conv2dParams resolve_conv2d(const Shape& x, const Shape& w, const Conv2dOptions& o) {
  Conv2dParams p;
  p.channels_last = parse_format(o.data_format, "conv2d");
  OSPREY_CHECK(x.ndim() == 4, "conv2d: expected a 4-D input ({}). Received: {}",
               p.channels_last ? "NHWC" : "NCHW", x.to_string());
  OSPREY_CHECK(w.ndim() == 4,
               "conv2d: expected a 4-D kernel [kh, kw, in/groups, out]. Received: {}",
               w.to_string());
  OSPREY_CHECK(o.groups >= 1, "conv2d: groups must be positive. Received: {}", o.groups);
  for (int i = 0; i < 2; ++i) {
    OSPREY_CHECK(o.strides[static_cast<size_t>(i)] >= 1 && o.dilation[static_cast<size_t>(i)] >= 1,
                 "conv2d: strides and dilation must be positive. Received: strides=[{}, {}], "
                 "dilation=[{}, {}]",
                 o.strides[0], o.strides[1], o.dilation[0], o.dilation[1]);
  }
  const int64_t c = p.channels_last ? x[3] : x[1];
  const int64_t h = p.channels_last ? x[1] : x[2];
  const int64_t wd = p.channels_last ? x[2] : x[3];
  OSPREY_CHECK(c % o.groups == 0 && w[3] % o.groups == 0,
               "conv2d: input channels {} and filters {} must both be divisible by groups={}", c,
               w[3], o.groups);
  OSPREY_CHECK(
      w[2] * o.groups == c,
      "conv2d: the kernel expects {} input channels per group ({} in all) but the input {} has {}",
      w[2], w[2] * o.groups, x.to_string(), c);
  p.stride_h = o.strides[0];
  p.stride_w = o.strides[1];
  p.dilation_h = o.dilation[0];
  p.dilation_w = o.dilation[1];
  p.groups = o.groups;
  std::array<int64_t, 4> pads{};
  resolve_padding(o.padding, o.pads, h, wd, w[0], w[1], p.stride_h, p.stride_w, p.dilation_h,
                  p.dilation_w, pads, "conv2d");
  p.pad_top = pads[0];
  p.pad_bottom = pads[1];
  p.pad_left = pads[2];
  p.pad_right = pads[3];
  const Shape y = conv2d_output_shape(x, w, p);
  OSPREY_CHECK(
      y.numel() > 0 || x[0] == 0,
      "conv2d: the output would be empty: input {} with kernel {} (strides [{}, {}], padding '{}')",
      x.to_string(), w.to_string(), p.stride_h, p.stride_w, o.padding);
  return p;
}

Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  const int64_t h = p.channels_last ? x[1] : x[2];
  const int64_t wd = p.channels_last ? x[2] : x[3];
  const int64_t oh =
      std::max<int64_t>(0, out_size(h, p.pad_top + p.pad_bottom, w[0], p.stride_h, p.dilation_h));
  const int64_t ow =
      std::max<int64_t>(0, out_size(wd, p.pad_left + p.pad_right, w[1], p.stride_w, p.dilation_w));
  return p.channels_last ? Shape{x[0], oh, ow, w[3]} : Shape{x[0], w[3], oh, ow};
}

Pool2dParams resolve_pool2d(const Shape& x, const Pool2dOptions& o, const char* op) {
  Pool2dParams p;
  p.channels_last = parse_format(o.data_format, op);
  OSPREY_CHECK(x.ndim() == 4, "{}: expected a 4-D input ({}). Received: {}", op,
               p.channels_last ? "NHWC" : "NCHW", x.to_string());
  p.kernel_h = o.pool_size[0];
  p.kernel_w = o.pool_size[1];
  p.stride_h = o.strides[0] == 0 ? p.kernel_h : o.strides[0];
  p.stride_w = o.strides[1] == 0 ? p.kernel_w : o.strides[1];
  OSPREY_CHECK(
      p.kernel_h >= 1 && p.kernel_w >= 1 && p.stride_h >= 1 && p.stride_w >= 1,
      "{}: pool_size and strides must be positive. Received: pool_size=[{}, {}], strides=[{}, {}]",
      op, o.pool_size[0], o.pool_size[1], o.strides[0], o.strides[1]);
  const int64_t h = p.channels_last ? x[1] : x[2];
  const int64_t w = p.channels_last ? x[2] : x[3];
  std::array<int64_t, 4> pads{};
  resolve_padding(o.padding, o.pads, h, w, p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, 1, 1,
                  pads, op);
  OSPREY_CHECK(
      pads[0] < p.kernel_h && pads[1] < p.kernel_h && pads[2] < p.kernel_w && pads[3] < p.kernel_w,
      "{}: padding must be smaller than the pool window [{}, {}]", op, p.kernel_h, p.kernel_w);
  p.pad_top = pads[0];
  p.pad_bottom = pads[1];
  p.pad_left = pads[2];
  p.pad_right = pads[3];
  const Shape y = pool2d_output_shape(x, p);
  OSPREY_CHECK(y.numel() > 0 || x[0] == 0,
               "{}: the output would be empty: input {} with pool_size [{}, {}] and padding '{}'",
               op, x.to_string(), p.kernel_h, p.kernel_w, o.padding);
  return p;
}

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p) {
  const int64_t h = p.channels_last ? x[1] : x[2];
  const int64_t w = p.channels_last ? x[2] : x[3];
  const int64_t c = p.channels_last ? x[3] : x[1];
  const int64_t oh =
      std::max<int64_t>(0, out_size(h, p.pad_top + p.pad_bottom, p.kernel_h, p.stride_h, 1));
  const int64_t ow =
      std::max<int64_t>(0, out_size(w, p.pad_left + p.pad_right, p.kernel_w, p.stride_w, 1));
  return p.channels_last ? Shape{x[0], oh, ow, c} : Shape{x[0], c, oh, ow};
}

namespace {
void check_conv_operands(const Tensor& x, const Tensor& w, const char* op) {
  check_floating(x, op, "input");
  check_floating(w, op, "kernel");
  check_same_device({&x, &w}, op);
  OSPREY_CHECK(x.dtype() == w.dtype(), "{}: input and kernel dtypes differ: {} and {}", op,
               x.describe(), w.describe());
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dParams& p) {
  check_conv_operands(x, w, "conv2d");
  OSPREY_CHECK(x.ndim() == 4 && w.ndim() == 4,
               "conv2d: expected a 4-D input and kernel. Received: {} and {}",
               x.shape().to_string(), w.shape().to_string());
  if (bias != nullptr) {
    check_same_device({&x, bias}, "conv2d");
    OSPREY_CHECK(bias->ndim() == 1 && bias->size(0) == w.size(3) && bias->dtype() == x.dtype(),
                 "conv2d: bias must be {}[{}]. Received: {}", dtype_name(x.dtype()), w.size(3),
                 bias->describe());
  }
  Tensor y = Tensor::empty(conv2d_output_shape(x.shape(), w.shape(), p), {x.dtype(), x.device()});
  backend_for(x.device()).conv2d_forward(x, w, bias, y, p);
  return y;
}

Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                            const Conv2dParams& p) {
  check_conv_operands(dy, w, "conv2d_backward_data");
  Tensor dx = Tensor::empty(x_shape, {dy.dtype(), dy.device()});
  backend_for(dy.device()).conv2d_backward_data(dy, w, dx, p);
  return dx;
}

Tensor conv2d_backward_weights(const Tensor& dy, const Tensor& x, const Shape& w_shape,
                               Tensor* dbias, const Conv2dParams& p) {
  check_conv_operands(dy, x, "conv2d_backward_weights");
  Tensor dw = Tensor::empty(w_shape, {dy.dtype(), dy.device()});
  if (dbias != nullptr) *dbias = Tensor::empty({w_shape[3]}, {dy.dtype(), dy.device()});
  backend_for(dy.device()).conv2d_backward_weights(dy, x, dw, dbias, p);
  return dw;
}

Tensor max_pool2d(const Tensor& x, const Pool2dParams& p, Tensor* workspace) {
  check_floating(x, "max_pool2d", "input");
  OSPREY_CHECK(x.ndim() == 4, "max_pool2d: expected a 4-D input. Received: {}",
               x.shape().to_string());
  Tensor y = Tensor::empty(pool2d_output_shape(x.shape(), p), {x.dtype(), x.device()});
  backend_for(x.device()).max_pool2d_forward(x, y, workspace, p);
  return y;
}

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace,
                           const Pool2dParams& p) {
  check_floating(dy, "max_pool2d_backward", "dy");
  Tensor dx = Tensor::empty(x.shape(), {dy.dtype(), dy.device()});
  backend_for(dy.device()).max_pool2d_backward(dy, x, workspace, dx, p);
  return dx;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p) {
  check_floating(x, "avg_pool2d", "input");
  OSPREY_CHECK(x.ndim() == 4, "avg_pool2d: expected a 4-D input. Received: {}",
               x.shape().to_string());
  Tensor y = Tensor::empty(pool2d_output_shape(x.shape(), p), {x.dtype(), x.device()});
  backend_for(x.device()).avg_pool2d_forward(x, y, p);
  return y;
}

Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dParams& p) {
  check_floating(dy, "avg_pool2d_backward", "dy");
  Tensor dx = Tensor::empty(x_shape, {dy.dtype(), dy.device()});
  backend_for(dy.device()).avg_pool2d_backward(dy, dx, p);
  return dx;
}

namespace {
Tensor softmax_op(const Tensor& x, int axis, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_floating(x, name, "x");
  OSPREY_CHECK(x.ndim() >= 1, "{}: expected at least one dimension. Received a scalar", name);
  const int a = normalize_axis(axis, x.ndim(), name);
  OSPREY_CHECK(x.shape()[a] > 0, "{}: axis {} of shape {} is empty", name, a,
               x.shape().to_string());
  Tensor y = Tensor::empty(x.shape(), {x.dtype(), x.device()});
  backend_for(x.device()).softmax_forward(x, a, log, y);
  return y;
}
}  // namespace

Tensor softmax(const Tensor& x, int axis) { return softmax_op(x, axis, false); }
Tensor log_softmax(const Tensor& x, int axis) { return softmax_op(x, axis, true); }

}  // namespace osprey
