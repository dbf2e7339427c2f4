#include "osprey/autograd/ops/cast.h"

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

Variable cast(const Variable& x, DType dtype) {
  detail::check_input(x, "cast", "x");
  if (x.dtype() == dtype) return x;
  Tensor y = x.value().to(dtype);
  if (!should_record(x)) return Variable(std::move(y));
  OSPREY_CHECK(is_floating(dtype),
               "cast: a Variable that requires grad can only be cast to a floating dtype. "
               "Received: {} to {}",
               x.describe(), dtype_name(dtype));
  // The node casts the returned gradient to x's dtype (Node::apply), which is the whole backward.
  return make_variable(std::move(y), "cast", {x}, [](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{g};
  });
}

}  // namespace osprey::autograd
