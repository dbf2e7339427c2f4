#include "osprey/quant/float8_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "osprey/autograd/node.h"
#include "osprey/autograd/ops/activation.h"
#include "osprey/core/error.h"
#include "osprey/nn/replica_context.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::quant {

namespace {

// The largest of every replica's amax (NaN if any is NaN), the same on every replica: under data
// parallelism the scales must come from the global batch, as on one device (and as JAX's sharded
// amax gives Keras 3), or each replica would quantize with its own share's range. The context
// only sums, so each replica posts its amax in its own slot of zeros: the sum is exact.
float replica_amax(float amax) {
  nn::ReplicaContext* c = nn::current_replica_context();
  if (c == nullptr || c->num_replicas() <= 1) return amax;
  // One buffer per replica thread, reused: a train step allocates nothing after the first.
  thread_local Tensor slots;
  if (!slots.defined() || slots.numel() != c->num_replicas())
    slots = zeros({c->num_replicas()}, {DType::float32});
  std::fill_n(slots.data<float>(), c->num_replicas(), 0.0f);
  slots.data<float>()[c->replica_id()] = amax;
  c->all_reduce_sum(slots);
  const float* v = slots.data<float>();
  float m = v[0];
  for (int r = 1; r < c->num_replicas(); ++r) {
    m = (std::isnan(m) || std::isnan(v[r])) ? std::numeric_limits<float>::quiet_NaN()
                                            : std::max(m, v[r]);
  }
  return m;
}

Tensor delayed_qdq(const Tensor& x, const precision::Float8State& state, bool update) {
  return precision::delayed_quantize_dequantize(x, state, update, replica_amax);
}

}  // namespace

Variable fake_quantize(const Variable& x, const precision::Float8State& state, bool update) {
  OSPREY_CHECK(x.defined(), "fake_quantize: x is an undefined Variable");
  Tensor y = delayed_qdq(x.value(), state, update);
  return autograd::make_variable(
      std::move(y), "fake_quantize", {x},
      [](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{g}; });
}

Variable quantize_gradient(const Variable& y, const precision::Float8State& state, bool update) {
  OSPREY_CHECK(y.defined(), "quantize_gradient: y is an undefined Variable");
  return autograd::make_variable(y.value(), "quantize_gradient", {y},
                                 [state, update](const Tensor& g, const std::vector<bool>&) {
                                   return std::vector<Tensor>{delayed_qdq(g, state, update)};
                                 });
}

Float8Scalings add_float8_scalings(
    const std::function<Variable(const std::string&, Tensor)>& add_weight,
    const precision::DelayedScaling& options) {
  const auto make = [&](const std::string& what, DType format) {
    const precision::Float8State s = precision::Float8State::create(format, options);
    return Float8Scaling{add_weight(what + "_scale", s.scale),
                         add_weight(what + "_amax_history", s.amax_history), format,
                         options.margin};
  };
  Float8Scalings out;
  out.inputs = make("inputs", DType::float8_e4m3fn);
  out.kernel = make("kernel", DType::float8_e4m3fn);
  out.outputs_grad = make("outputs_grad", DType::float8_e5m2);
  return out;
}

Variable float8_product(const Variable& x, const Variable& kernel, const Float8Scalings& s,
                        bool training,
                        const std::function<Variable(const Variable&, const Variable&)>& op) {
  Variable y = op(fake_quantize(x, s.inputs.state(), training),
                  fake_quantize(kernel, s.kernel.state(), training));
  return quantize_gradient(y, s.outputs_grad.state(), training);
}

Variable float8_linear(const Variable& x, const Variable& kernel, const Variable& bias,
                       Activation act, const Float8Scalings& s, bool training) {
  if (act == Activation::gelu_tanh || act == Activation::gelu_erf) {
    return autograd::activation(float8_linear(x, kernel, bias, Activation::none, s, training), act);
  }
  OSPREY_CHECK(x.defined() && kernel.defined(),
               "float8_linear: x and kernel must be defined Variables");
  Tensor xq = delayed_qdq(x.value(), s.inputs.state(), training);
  Tensor kq = delayed_qdq(kernel.value(), s.kernel.state(), training);
  Tensor y = osprey::linear(xq, kq, bias.defined() ? &bias.value() : nullptr, act);
  if (!autograd::should_record(x, kernel, bias)) return Variable(std::move(y));
  const int64_t in = kq.size(0), out = kq.size(1);
  return autograd::make_variable(
      y, "float8_linear", {x, kernel, bias},
      [xq = kernel.requires_grad() ? xq : Tensor(), kq = x.requires_grad() ? kq : Tensor(),
       yv = act == Activation::none ? Tensor() : y, act, in, out, xs = x.shape(),
       grad_state = s.outputs_grad.state(),
       training](const Tensor& g, const std::vector<bool>& need) {
        // As autograd::linear's backward, with dz quantized between the bias and the products.
        Tensor dz = g;
        if (act == Activation::relu) dz = osprey::binary_op(BinaryOp::relu_backward, g, yv);
        if (act == Activation::sigmoid) dz = osprey::binary_op(BinaryOp::sigmoid_backward, g, yv);
        if (act == Activation::tanh) dz = osprey::binary_op(BinaryOp::tanh_backward, g, yv);
        const Tensor dz2 = dz.reshape({-1, out});  // [rows, out]
        std::vector<Tensor> grads(3);
        if (need[2]) grads[2] = osprey::sum(dz2, {0});
        if (!need[0] && !need[1]) return grads;
        const Tensor dzq = delayed_qdq(dz2, grad_state, training);
        if (need[0]) grads[0] = osprey::matmul(dzq, kq.transpose(0, 1)).reshape(xs);  // [rows, in]
        if (need[1])
          grads[1] = osprey::matmul(xq.reshape({-1, in}).transpose(0, 1), dzq);  // [in, out]
        return grads;
      });
}

void write_float8_config(nlohmann::json& c, const precision::DelayedScaling& o) {
  c["quantization_mode"] = "float8";
  c["amax_history_length"] = o.amax_history_length;
  c["margin"] = o.margin;
}

precision::DelayedScaling read_float8_config(const nlohmann::json& c,
                                             const std::string& class_name) {
  const std::string mode = c.value("quantization_mode", std::string("float8"));
  OSPREY_CHECK(mode == "float8", "{}: quantization_mode must be \"float8\". Received: \"{}\"",
               class_name, mode);
  precision::DelayedScaling o;
  o.amax_history_length = c.value("amax_history_length", o.amax_history_length);
  o.margin = c.value("margin", o.margin);
  precision::check_delayed_scaling(o, class_name.c_str());
  return o;
}

}  // namespace osprey::quant
