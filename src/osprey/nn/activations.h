// Activations by Keras name: "relu", "gelu", "sigmoid", "tanh", "silu" (or "swish"), "softmax",
// "linear" (or "").
// Each also says which fused kernel activation it is, so Dense and Conv2D can fold it into their
// matmul/convolution instead of running a second pass.
#pragma once

#include <string>

#include "osprey/autograd/variable.h"
#include "osprey/tensor/backend.h"

namespace osprey::nn {

class ActivationFn {
 public:
  ActivationFn() : ActivationFn("linear") {}
  ActivationFn(const char* name) : ActivationFn(std::string(name)) {}  // NOLINT: implicit by design
  ActivationFn(const std::string& name);                               // NOLINT

  autograd::Variable operator()(const autograd::Variable& x) const;
  const std::string& name() const { return name_; }
  // The kernel-fusable form, or Activation::none when it has none (silu, softmax, linear).
  Activation fused() const { return fused_; }
  bool is_linear() const { return name_ == "linear"; }

 private:
  std::string name_;
  Activation fused_ = Activation::none;
};

}  // namespace osprey::nn
