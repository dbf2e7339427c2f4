#include "osprey/autograd/ops/conv.h"

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

Variable conv2d(const Variable& x, const Variable& kernel, const Variable& bias,
                const Conv2dOptions& options) {
  detail::check_input(x, "conv2d", "input");
  detail::check_input(kernel, "conv2d", "kernel");
  return conv2d(x, kernel, bias, resolve_conv2d(x.shape(), kernel.shape(), options));
}

Variable conv2d(const Variable& x, const Variable& kernel, const Conv2dOptions& options) {
  return conv2d(x, kernel, Variable(), options);
}

Variable conv2d(const Variable& x, const Variable& kernel, const Variable& bias,
                const Conv2dParams& p) {
  detail::check_input(x, "conv2d", "input");
  detail::check_input(kernel, "conv2d", "kernel");
  OSPREY_CHECK(
      p.activation == Activation::none || p.activation == Activation::relu ||
          p.activation == Activation::sigmoid || p.activation == Activation::tanh,
      "conv2d: a fused activation must be relu, sigmoid or tanh (their derivatives come from "
      "the output); apply gelu after the convolution");
  Tensor y = osprey::conv2d(x.value(), kernel.value(), detail::value_or_null(bias), p);
  if (!should_record(x, kernel, bias)) return Variable(std::move(y));
  const Tensor yv = p.activation == Activation::none ? Tensor() : y;
  return make_variable(
      std::move(y), "conv2d", {x, kernel, bias},
      [xv = kernel.requires_grad() ? x.value() : Tensor(),
       wv = x.requires_grad() ? kernel.value() : Tensor(), yv, xs = x.shape(), ws = kernel.shape(),
       p](const Tensor& g_out, const std::vector<bool>& need) {
        Tensor g = g_out;
        if (p.activation == Activation::relu)
          g = osprey::binary_op(BinaryOp::relu_backward, g_out, yv);
        if (p.activation == Activation::sigmoid)
          g = osprey::binary_op(BinaryOp::sigmoid_backward, g_out, yv);
        if (p.activation == Activation::tanh)
          g = osprey::binary_op(BinaryOp::tanh_backward, g_out, yv);
        std::vector<Tensor> grads(3);
        if (need[0]) grads[0] = osprey::conv2d_backward_data(g, wv, xs, p);
        if (need[1]) {
          grads[1] = osprey::conv2d_backward_weights(g, xv, ws, need[2] ? &grads[2] : nullptr, p);
        } else if (need[2]) {
          // Only the bias wants a gradient: the sum of g over every axis but the channel axis.
          grads[2] = p.channels_last ? osprey::sum(g, {0, 1, 2}) : osprey::sum(g, {0, 2, 3});
        }
        return grads;
      });
}

}  // namespace osprey::autograd
