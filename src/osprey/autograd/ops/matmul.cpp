#include "osprey/autograd/ops/matmul.h"

#include "osprey/autograd/ops/activation.h"
#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

using Grads = std::vector<Tensor>;

namespace {
Tensor t_last(const Tensor& t) { return t.transpose(-1, -2); }
}  // namespace

Variable matmul(const Variable& a, const Variable& b) {
  detail::check_input(a, "matmul", "a");
  detail::check_input(b, "matmul", "b");
  Tensor y = osprey::matmul(a.value(), b.value());
  if (!should_record(a, b)) return Variable(std::move(y));
  // Backward works on the operands as matmul sees them: 1-D ones promoted to matrices.
  const Tensor a2 = a.ndim() == 1 ? a.value().unsqueeze(0) : a.value();
  const Tensor b2 = b.ndim() == 1 ? b.value().unsqueeze(1) : b.value();
  Shape full = y.shape();  // y with the dropped vector dims restored
  if (a.ndim() == 1) full.insert(full.ndim() - (b.ndim() == 1 ? 0 : 1), 1);
  if (b.ndim() == 1) full.push_back(1);
  return make_variable(
      std::move(y), "matmul", {a, b},
      [av = b.requires_grad() ? a2 : Tensor(), bv = a.requires_grad() ? b2 : Tensor(), full,
       as = a.shape(), bs = b.shape(), a2s = a2.shape(),
       b2s = b2.shape()](const Tensor& g, const std::vector<bool>& need) {
        const Tensor g2 = g.reshape(full);
        Grads out(2);
        if (need[0]) out[0] = osprey::sum_to(osprey::matmul(g2, t_last(bv)), a2s).reshape(as);
        if (need[1]) out[1] = osprey::sum_to(osprey::matmul(t_last(av), g2), b2s).reshape(bs);
        return out;
      });
}

Variable linear(const Variable& x, const Variable& kernel, const Variable& bias, Activation act) {
  detail::check_input(x, "linear", "x");
  detail::check_input(kernel, "linear", "kernel");
  if (act == Activation::gelu_tanh || act == Activation::gelu_erf) {
    return activation(linear(x, kernel, bias, Activation::none), act);
  }
  Tensor y = osprey::linear(x.value(), kernel.value(), detail::value_or_null(bias), act);
  if (!should_record(x, kernel, bias)) return Variable(std::move(y));
  const int64_t in = kernel.size(0), out = kernel.size(1);
  return make_variable(
      y, "linear", {x, kernel, bias},
      [xv = kernel.requires_grad() ? x.value() : Tensor(),
       wv = x.requires_grad() ? kernel.value() : Tensor(),
       yv = act == Activation::none ? Tensor() : y, act, in, out,
       xs = x.shape()](const Tensor& g, const std::vector<bool>& need) {
        Tensor dz = g;
        if (act == Activation::relu) dz = osprey::binary_op(BinaryOp::relu_backward, g, yv);
        if (act == Activation::sigmoid) dz = osprey::binary_op(BinaryOp::sigmoid_backward, g, yv);
        if (act == Activation::tanh) dz = osprey::binary_op(BinaryOp::tanh_backward, g, yv);
        const Tensor dz2 = dz.reshape({-1, out});  // [rows, out]
        Grads grads(3);
        if (need[0]) grads[0] = osprey::matmul(dz2, t_last(wv)).reshape(xs);        // [rows, in]
        if (need[1]) grads[1] = osprey::matmul(t_last(xv.reshape({-1, in})), dz2);  // [in, out]
        if (need[2]) grads[2] = osprey::sum(dz2, {0});                              // [out]
        return grads;
      });
}

}  // namespace osprey::autograd
