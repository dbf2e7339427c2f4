// The recurrent ops: argument checks with Keras-style messages, go_backwards as a reversal of
// the time axis around the kernels, and the packed output buffer (ops_rnn.h).
#include "osprey/tensor/ops_rnn.h"

#include <string>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey {

namespace {

const char* op_name(RnnCell cell) {
  switch (cell) {
    case RnnCell::lstm:
      return "lstm";
    case RnnCell::gru:
    case RnnCell::gru_reset_after:
      return "gru";
    case RnnCell::simple_rnn:
      break;
  }
  return "simple_rnn";
}

int64_t gates_of(RnnCell cell) {
  return cell == RnnCell::lstm ? 4 : cell == RnnCell::simple_rnn ? 1 : 3;
}

RnnCell resolve_cell(RnnCell cell, const RnnOptions& o) {
  if (cell == RnnCell::gru || cell == RnnCell::gru_reset_after)
    return o.reset_after ? RnnCell::gru_reset_after : RnnCell::gru;
  return cell;
}

void check_dtype(const Tensor& t, const Tensor& x, const char* op, const char* name) {
  check_floating(t, op, name);
  OSPREY_CHECK(t.dtype() == x.dtype() && t.device() == x.device(),
               "{}: {} must have the dtype and device of inputs ({}). Received: {}", op, name,
               x.describe(), t.describe());
}

void check_state(const Tensor* s, const Tensor& x, const Shape& want, const char* op,
                 const char* name) {
  if (s == nullptr) return;
  check_dtype(*s, x, op, name);
  OSPREY_CHECK(s->shape() == want,
               "{}: initial state {} must be [batch, units] = {}. Received: {}.shape={}", op, name,
               want.to_string(), name, s->shape().to_string());
}

struct Checked {
  RnnCell cell;
  int64_t batch, steps, units;
};

Checked check_args(RnnCell cell_in, const Tensor& x, const Tensor* h0, const Tensor* c0,
                   const Tensor& kernel, const Tensor& recurrent, const Tensor* bias,
                   const RnnOptions& o) {
  const RnnCell cell = resolve_cell(cell_in, o);
  const char* op = op_name(cell);
  const int64_t g = gates_of(cell);
  check_floating(x, op, "inputs");
  OSPREY_CHECK(x.ndim() == 3,
               "{}: inputs must be 3-D [batch, timesteps, features]. Received: inputs.shape={}", op,
               x.shape().to_string());
  OSPREY_CHECK(x.size(1) >= 1,
               "{}: inputs must have at least one timestep. Received: inputs.shape={}", op,
               x.shape().to_string());
  check_dtype(kernel, x, op, "kernel");
  check_dtype(recurrent, x, op, "recurrent_kernel");
  OSPREY_CHECK(
      recurrent.ndim() == 2 && recurrent.size(1) == g * recurrent.size(0) && recurrent.size(0) > 0,
      "{}: recurrent_kernel must be [units, {} * units]. Received: "
      "recurrent_kernel.shape={}",
      op, g, recurrent.shape().to_string());
  const int64_t batch = x.size(0), units = recurrent.size(0);
  const Shape want_kernel{x.size(2), g * units};
  OSPREY_CHECK(kernel.shape() == want_kernel,
               "{}: kernel must be [features, {} * units] = {} for inputs.shape={} and units={}. "
               "Received: kernel.shape={}",
               op, g, want_kernel.to_string(), x.shape().to_string(), units,
               kernel.shape().to_string());
  if (bias != nullptr) {
    check_dtype(*bias, x, op, "bias");
    const bool two_rows = cell == RnnCell::gru_reset_after;
    const Shape want = two_rows ? Shape{2, g * units} : Shape{g * units};
    OSPREY_CHECK(bias->shape() == want, "{}: bias must be {} ({}). Received: bias.shape={}", op,
                 want.to_string(),
                 two_rows ? "input and recurrent biases of 3 * units, reset_after=True"
                          : (g == 1 ? "units" : (g == 4 ? "4 * units" : "3 * units")),
                 bias->shape().to_string());
  }
  check_state(h0, x, Shape{batch, units}, op, "h");
  OSPREY_CHECK(c0 == nullptr || cell == RnnCell::lstm,
               "{}: received an initial state c, but only lstm has a cell state", op);
  check_state(c0, x, Shape{batch, units}, op, "c");
  if (o.mask.defined()) {
    OSPREY_CHECK(o.mask.shape() == Shape({batch, x.size(1)}),
                 "{}: mask must be [batch, timesteps] = {}. Received: mask.shape={}", op,
                 Shape({batch, x.size(1)}).to_string(), o.mask.shape().to_string());
  }
  OSPREY_CHECK(cell != RnnCell::simple_rnn || o.activation == Activation::tanh ||
                   o.activation == Activation::relu,
               "simple_rnn: activation must be tanh or relu. Received: activation #{}",
               static_cast<int>(o.activation));
  return {cell, batch, x.size(1), units};
}

// t with its axis 1 (time) reversed, as a new contiguous tensor.
Tensor reverse_time(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), {t.dtype(), t.device()});
  const int64_t n = t.size(1);
  for (int64_t i = 0; i < n; ++i) out.select(1, n - 1 - i).copy_(t.select(1, i));
  return out;
}

// The tensors the kernels read, go_backwards applied.
struct Prepared {
  Tensor x, h0, c0, mask;
  RnnParams params;
};

Prepared prepare(const Checked& c, const Tensor& x, const Tensor* h0, const Tensor* c0,
                 const RnnOptions& o) {
  Prepared p;
  p.params = {.cell = c.cell,
              .activation = c.cell == RnnCell::simple_rnn ? o.activation : Activation::tanh,
              .zero_output_for_mask = o.zero_output_for_mask};
  const TensorOptions opts{x.dtype(), x.device()};
  p.x = o.go_backwards ? reverse_time(x) : x;
  p.h0 = h0 != nullptr ? *h0 : zeros({c.batch, c.units}, opts);
  if (c.cell == RnnCell::lstm) p.c0 = c0 != nullptr ? *c0 : zeros({c.batch, c.units}, opts);
  if (o.mask.defined()) {
    const Tensor m = o.mask.to(DType::boolean).contiguous();
    p.mask = o.go_backwards ? reverse_time(m) : m;
  }
  return p;
}

RnnArgs args_of(const Prepared& p, const Tensor& kernel, const Tensor& recurrent,
                const Tensor* bias) {
  return {.x = &p.x,
          .h0 = &p.h0,
          .c0 = p.c0.defined() ? &p.c0 : nullptr,
          .kernel = &kernel,
          .recurrent_kernel = &recurrent,
          .bias = bias,
          .mask = p.mask.defined() ? &p.mask : nullptr};
}

}  // namespace

RnnForward rnn_forward(RnnCell cell, const Tensor& x, const Tensor* h0, const Tensor* c0,
                       const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor* bias,
                       const RnnOptions& options, bool training) {
  const Checked c = check_args(cell, x, h0, c0, kernel, recurrent_kernel, bias, options);
  const Prepared p = prepare(c, x, h0, c0, options);
  const int64_t seq = c.batch * c.steps * c.units, state = c.batch * c.units;
  const bool lstm = c.cell == RnnCell::lstm;
  RnnForward f;
  f.packed = Tensor::empty({seq + state * (lstm ? 2 : 1)}, {x.dtype(), x.device()});
  f.y = f.packed.narrow(0, 0, seq).view({c.batch, c.steps, c.units});
  f.h_n = f.packed.narrow(0, seq, state).view({c.batch, c.units});
  if (lstm) f.c_n = f.packed.narrow(0, seq + state, state).view({c.batch, c.units});
  const Backend& be = backend_for(x.device());
  be.rnn_forward(args_of(p, kernel, recurrent_kernel, bias), p.params, f.y, f.h_n,
                 lstm ? &f.c_n : nullptr, training ? &f.workspace : nullptr);
  return f;
}

RnnBackward rnn_backward(RnnCell cell, const Tensor& x, const Tensor* h0, const Tensor* c0,
                         const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor* bias,
                         const RnnOptions& options, const RnnForward& forward, const Tensor& dy,
                         const Tensor& dh_n, const Tensor& dc_n) {
  const Checked c = check_args(cell, x, h0, c0, kernel, recurrent_kernel, bias, options);
  const Prepared p = prepare(c, x, h0, c0, options);
  const bool lstm = c.cell == RnnCell::lstm;
  const TensorOptions opts{x.dtype(), x.device()};
  auto or_zeros = [&](const Tensor& t, const Shape& s) {
    return t.defined() ? t.to(x.dtype()).contiguous() : zeros(s, opts);
  };
  const Tensor g_y = or_zeros(dy, {c.batch, c.steps, c.units});
  const Tensor g_h = or_zeros(dh_n, {c.batch, c.units});
  const Tensor g_c = lstm ? or_zeros(dc_n, {c.batch, c.units}) : Tensor();
  RnnBackward g;
  g.dx = Tensor::empty(x.shape(), opts);
  g.dh0 = Tensor::empty({c.batch, c.units}, opts);
  if (lstm) g.dc0 = Tensor::empty({c.batch, c.units}, opts);
  g.dkernel = Tensor::empty(kernel.shape(), opts);
  g.drecurrent_kernel = Tensor::empty(recurrent_kernel.shape(), opts);
  if (bias != nullptr) g.dbias = Tensor::empty(bias->shape(), opts);
  const RnnResults out{.y = &forward.y,
                       .h_n = &forward.h_n,
                       .c_n = lstm ? &forward.c_n : nullptr,
                       .workspace = &forward.workspace};
  const RnnGrads grads{.dx = &g.dx,
                       .dh0 = &g.dh0,
                       .dc0 = lstm ? &g.dc0 : nullptr,
                       .dkernel = &g.dkernel,
                       .drecurrent_kernel = &g.drecurrent_kernel,
                       .dbias = bias != nullptr ? &g.dbias : nullptr};
  backend_for(x.device())
      .rnn_backward(args_of(p, kernel, recurrent_kernel, bias), p.params, out, g_y, g_h,
                    lstm ? &g_c : nullptr, grads);
  if (options.go_backwards) g.dx = reverse_time(g.dx);
  return g;
}

}  // namespace osprey
