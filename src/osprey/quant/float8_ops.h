// The differentiable float8 ops that Float8Dense and Float8Conv2D are made of, on top of the
// recipe in precision/float8.h (fake quantization with delayed scaling), plus what the two layers
// share: their six non-trainable scaling weights and their config fields.
//   Variable y = float8_linear(x, kernel, bias, Activation::relu, scalings, training);
// On CPU the float8 arithmetic is emulated (exact quantize/dequantize, float32 products).
#pragma once

#include <array>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "osprey/autograd/variable.h"
#include "osprey/precision/float8.h"
#include "osprey/tensor/backend.h"

namespace osprey::quant {

using autograd::Variable;

// Forward: precision::delayed_quantize_dequantize(x, state, update). Backward: the gradient
// passes through unchanged (the straight-through estimator, as Transformer Engine and Keras).
Variable fake_quantize(const Variable& x, const precision::Float8State& state, bool update);

// Forward: y itself. Backward: the incoming gradient is fake-quantized with state (e5m2), and
// with update its amax recorded, so everything upstream of y sees the float8 gradient.
Variable quantize_gradient(const Variable& y, const precision::Float8State& state, bool update);

// One tensor's delayed-scaling state as two weights of a layer (<what>_scale and
// <what>_amax_history). state() reads the weights' current tensors, so loading or
// set_weights() is seen at the next call.
struct Float8Scaling {
  Variable scale, amax_history;
  DType format = DType::float8_e4m3fn;
  int margin = 0;
  precision::Float8State state() const {
    return {format, margin, scale.value(), amax_history.value()};
  }
};

// The three states of a float8 layer, named as Keras names them: inputs and kernel in e4m3fn,
// outputs_grad in e5m2.
struct Float8Scalings {
  Float8Scaling inputs, kernel, outputs_grad;
};

// Adds the six weights (scale 1, history 0) through add_weight, a layer's
// add_weight(name, value, trainable=false).
Float8Scalings add_float8_scalings(
    const std::function<Variable(const std::string&, Tensor)>& add_weight,
    const precision::DelayedScaling& options);

// op(fake_quantize(x), fake_quantize(kernel)) with its output gradient quantized (what
// Float8Conv2D runs). The histories and scales update only in training. The bias and activation
// come after it (they see the unquantized gradient, as in Keras).
Variable float8_product(const Variable& x, const Variable& kernel, const Float8Scalings& s,
                        bool training,
                        const std::function<Variable(const Variable&, const Variable&)>& op);

// The float8 Dense as one op: y = activation(xq · kq + bias) through the fused oneDNN linear,
// xq and kq fake-quantized (e4m3fn); backward takes dz through the activation, gives the bias
// sum(dz) and quantizes dz (e5m2) for the input and kernel gradients:
// dx = dzq · kq^T, dkernel = xq^T · dzq. Histories and scales update only in training. gelu,
// which linear cannot back-propagate from its output, runs as a separate op after it.
// x: [..., in] · kernel: [in, out] (+ bias [out]) -> [..., out].
Variable float8_linear(const Variable& x, const Variable& kernel, const Variable& bias,
                       Activation activation, const Float8Scalings& s, bool training);

// "quantization_mode": "float8", "amax_history_length", "margin" into / out of a layer config.
void write_float8_config(nlohmann::json& config, const precision::DelayedScaling& options);
precision::DelayedScaling read_float8_config(const nlohmann::json& config,
                                             const std::string& class_name);

}  // namespace osprey::quant
