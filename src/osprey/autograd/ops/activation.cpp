#include "osprey/autograd/ops/activation.h"

#include "osprey/autograd/ops/common.h"
#include "osprey/autograd/ops/elementwise.h"

namespace osprey::autograd {

namespace {
// y = op(x); dx = binary(backward_op, dy, saved) where saved is x or y.
Variable fused(const char* name, const Variable& x, UnaryOp op, BinaryOp backward_op,
               bool saves_output) {
  detail::check_float_input(x, name, "x");
  Tensor y = osprey::unary_op(op, x.value());
  if (!should_record(x)) return Variable(std::move(y));
  Tensor saved = saves_output ? y : x.value();
  return make_variable(
      std::move(y), name, {x},
      [saved = std::move(saved), backward_op](const Tensor& g, const std::vector<bool>&) {
        return std::vector<Tensor>{osprey::binary_op(backward_op, g, saved)};
      },
      // The sigmoid's logits stay reachable for binary crossentropy (see make_variable).
      op == UnaryOp::sigmoid ? KeepInputs::yes : KeepInputs::no);
}
}  // namespace

Variable relu(const Variable& x) {
  return fused("relu", x, UnaryOp::relu, BinaryOp::relu_backward, false);
}

Variable gelu(const Variable& x, bool approximate_tanh) {
  return approximate_tanh
             ? fused("gelu", x, UnaryOp::gelu_tanh, BinaryOp::gelu_tanh_backward, false)
             : fused("gelu", x, UnaryOp::gelu_erf, BinaryOp::gelu_erf_backward, false);
}

Variable sigmoid(const Variable& x) {
  return fused("sigmoid", x, UnaryOp::sigmoid, BinaryOp::sigmoid_backward, true);
}

Variable tanh(const Variable& x) {
  return fused("tanh", x, UnaryOp::tanh, BinaryOp::tanh_backward, true);
}

Variable silu(const Variable& x) { return mul(x, sigmoid(x)); }

Variable activation(const Variable& x, Activation a) {
  switch (a) {
    case Activation::none:
      return x;
    case Activation::relu:
      return relu(x);
    case Activation::gelu_tanh:
      return gelu(x, true);
    case Activation::gelu_erf:
      return gelu(x, false);
    case Activation::sigmoid:
      return sigmoid(x);
    case Activation::tanh:
      return tanh(x);
  }
  OSPREY_THROW(ValueError, "activation: unknown activation {}", static_cast<int>(a));
}

}  // namespace osprey::autograd
