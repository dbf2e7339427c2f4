#include "osprey/autograd/ops/rnn.h"

#include <vector>

#include "osprey/autograd/ops/common.h"
#include "osprey/autograd/ops/shape.h"

namespace osprey::autograd {

namespace {

// The op records one output, the forward's packed buffer (y, then h_n, then c_n, flat); the
// three results are views of it, so each one's gradient flows back through that one node.
RnnOutputs recurrent(RnnCell cell, const char* op, const Variable& x, const Variable& h0,
                     const Variable& c0, const Variable& kernel, const Variable& recurrent_kernel,
                     const Variable& bias, const RnnOptions& options) {
  detail::check_input(x, op, "inputs");
  detail::check_input(kernel, op, "kernel");
  detail::check_input(recurrent_kernel, op, "recurrent_kernel");
  const bool record = should_record(x, h0, c0, kernel, recurrent_kernel, bias);
  RnnForward f = osprey::rnn_forward(
      cell, x.value(), detail::value_or_null(h0), detail::value_or_null(c0), kernel.value(),
      recurrent_kernel.value(), detail::value_or_null(bias), options, record);
  const bool has_c = f.c_n.defined();
  if (!record) {
    return {Variable(f.y), Variable(f.h_n), has_c ? Variable(f.c_n) : Variable()};
  }
  const Shape ys = f.y.shape(), hs = f.h_n.shape();
  const Variable packed = make_variable(
      f.packed, op, {x, h0, c0, kernel, recurrent_kernel, bias},
      [cell, options, f, xv = x.value(), h0v = h0.defined() ? h0.value() : Tensor(),
       c0v = c0.defined() ? c0.value() : Tensor(), kv = kernel.value(),
       rv = recurrent_kernel.value(), bv = bias.defined() ? bias.value() : Tensor()](
          const Tensor& g, const std::vector<bool>& /*need*/) {
        const int64_t seq = f.y.numel(), state = f.h_n.numel();
        const Tensor gf = g.contiguous();
        const Tensor dy = gf.narrow(0, 0, seq).view(f.y.shape());
        const Tensor dh = gf.narrow(0, seq, state).view(f.h_n.shape());
        const Tensor dc =
            f.c_n.defined() ? gf.narrow(0, seq + state, state).view(f.c_n.shape()) : Tensor();
        RnnBackward r = osprey::rnn_backward(cell, xv, h0v.defined() ? &h0v : nullptr,
                                             c0v.defined() ? &c0v : nullptr, kv, rv,
                                             bv.defined() ? &bv : nullptr, options, f, dy, dh, dc);
        return std::vector<Tensor>{r.dx, r.dh0, r.dc0, r.dkernel, r.drecurrent_kernel, r.dbias};
      });
  const int64_t seq = ys.numel(), state = hs.numel();
  RnnOutputs out;
  out.outputs = reshape(narrow(packed, 0, 0, seq), ys);
  out.h = reshape(narrow(packed, 0, seq, state), hs);
  if (has_c) out.c = reshape(narrow(packed, 0, seq + state, state), hs);
  return out;
}

}  // namespace

RnnOutputs lstm(const Variable& x, const Variable& h0, const Variable& c0, const Variable& kernel,
                const Variable& recurrent_kernel, const Variable& bias, const RnnOptions& options) {
  return recurrent(RnnCell::lstm, "lstm", x, h0, c0, kernel, recurrent_kernel, bias, options);
}

RnnOutputs gru(const Variable& x, const Variable& h0, const Variable& kernel,
               const Variable& recurrent_kernel, const Variable& bias, const RnnOptions& options) {
  return recurrent(RnnCell::gru, "gru", x, h0, Variable(), kernel, recurrent_kernel, bias, options);
}

RnnOutputs simple_rnn(const Variable& x, const Variable& h0, const Variable& kernel,
                      const Variable& recurrent_kernel, const Variable& bias,
                      const RnnOptions& options) {
  return recurrent(RnnCell::simple_rnn, "simple_rnn", x, h0, Variable(), kernel, recurrent_kernel,
                   bias, options);
}

}  // namespace osprey::autograd
