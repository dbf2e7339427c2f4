#include "osprey/autograd/ops/dropout.h"

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

Variable dropout(const Variable& x, double rate, uint64_t seed, bool training) {
  detail::check_float_input(x, "dropout", "x");
  OSPREY_CHECK(rate >= 0.0 && rate < 1.0, "dropout: rate must be in [0, 1). Received: rate={}",
               rate);
  if (!training || rate == 0.0) return x;
  // One saved tensor: the mask already scaled by 1 / (1 - rate).
  const Tensor keep = random_bernoulli(x.shape(), 1.0 - rate,
                                       {.seed = seed, .dtype = x.dtype(), .device = x.device()});
  const Tensor scaled_mask = osprey::mul(keep, 1.0 / (1.0 - rate));
  Tensor y = osprey::mul(x.value(), scaled_mask);
  if (!should_record(x)) return Variable(std::move(y));
  return make_variable(std::move(y), "dropout", {x},
                       [scaled_mask](const Tensor& g, const std::vector<bool>&) {
                         return std::vector<Tensor>{osprey::mul(g, scaled_mask)};
                       });
}

}  // namespace osprey::autograd
