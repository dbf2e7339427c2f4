#include "osprey/autograd/ops/softmax.h"

#include "osprey/autograd/ops/cast.h"
#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

namespace {
Variable softmax_op(const char* name, const Variable& x_in, int axis, bool log) {
  detail::check_input(x_in, name, "x");
  // Numerically sensitive: 16-bit inputs are normalized in float32 and the result stays float32
  // (as PyTorch's autocast), whatever the dtype policy of the layer that asked.
  const Variable x = is_low_precision(x_in.dtype()) ? cast(x_in, DType::float32) : x_in;
  Tensor y = log ? osprey::log_softmax(x.value(), axis) : osprey::softmax(x.value(), axis);
  if (!should_record(x)) return Variable(std::move(y));
  const int a = normalize_axis(axis, y.ndim(), name);
  return make_variable(
      y, name, {x},
      [y, a, log](const Tensor& g, const std::vector<bool>&) {
        Tensor dx = Tensor::empty(y.shape(), {y.dtype(), y.device()});
        const Tensor dy = g.dtype() == y.dtype() ? g : g.to(y.dtype());
        backend_for(y.device()).softmax_backward(dy, y, a, log, dx);
        return std::vector<Tensor>{dx};
      },
      KeepInputs::yes);
}
}  // namespace

Variable softmax(const Variable& x, int axis) { return softmax_op("softmax", x, axis, false); }
Variable log_softmax(const Variable& x, int axis) {
  return softmax_op("log_softmax", x, axis, true);
}

}  // namespace osprey::autograd
