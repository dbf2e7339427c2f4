#include "osprey/nn/activations.h"

#include "osprey/autograd/ops.h"

namespace osprey::nn {

ActivationFn::ActivationFn(const std::string& name) : name_(name.empty() ? "linear" : name) {
  if (name_ == "relu") {
    fused_ = Activation::relu;
  } else if (name_ == "gelu") {
    fused_ = Activation::gelu_erf;
  } else if (name_ == "sigmoid") {
    fused_ = Activation::sigmoid;
  } else if (name_ == "tanh") {
    fused_ = Activation::tanh;
  } else {
    OSPREY_CHECK(
        name_ == "linear" || name_ == "softmax" || name_ == "silu" || name_ == "swish",
        "unknown activation '{}'. Expected one of: relu, gelu, sigmoid, tanh, silu (or swish), "
        "softmax, linear",
        name_);
  }
}

autograd::Variable ActivationFn::operator()(const autograd::Variable& x) const {
  if (fused_ != Activation::none) return autograd::activation(x, fused_);
  if (name_ == "softmax") return autograd::softmax(x, -1);
  if (name_ == "silu" || name_ == "swish") return autograd::silu(x);
  return x;
}

}  // namespace osprey::nn
