#include "osprey/optim/sgd.h"

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/optim/config_reader.h"

namespace osprey::optim {

namespace {

template <class C> struct SGDKernel {
  using Params = SGDStep;
  explicit SGDKernel(const SGDStep& p)
      : lr(static_cast<C>(p.learning_rate)), momentum(static_cast<C>(p.momentum)),
        use_momentum(p.momentum != 0.0), nesterov(p.nesterov) {}
  // s0: momentum (velocity), present when momentum > 0.
  C operator()(C g, C w, C* __restrict m, C*, C*, int64_t i) const {
    if (!use_momentum) return w - g * lr;
    const C mi = m[i] * momentum - g * lr;
    m[i] = mi;
    return nesterov ? w + (mi * momentum - g * lr) : w + mi;
  }
  C lr, momentum;
  bool use_momentum, nesterov;
};

}  // namespace

SGD::SGD(SGDOptions o)
    : Optimizer("SGD", common(o), {o.momentum != 0.0 ? "momentum" : "", "", ""}),
      momentum_(o.momentum), nesterov_(o.nesterov) {
  OSPREY_CHECK(std::isfinite(o.momentum) && o.momentum >= 0.0 && o.momentum <= 1.0,
               "SGD: momentum must be in [0, 1]. Received: momentum={}", o.momentum);
}

SGD SGD::from_config(const nlohmann::json& config) {
  detail::ConfigReader r(config, "SGD");
  SGDOptions o;
  OptimizerOptions c = common(o);
  read_config(r, c);
  set_common(o, c);
  o.momentum = r.number("momentum", o.momentum);
  o.nesterov = r.boolean("nesterov", o.nesterov);
  r.finish();
  return SGD(std::move(o));
}

const void* SGD::prepare_step(double learning_rate, int64_t) {
  step_ = {learning_rate, momentum_, nesterov_};
  return &step_;
}

detail::KernelFn SGD::kernel(DType value, DType grad) const {
  return detail::kernel_for<SGDKernel>(value, grad);
}

void SGD::add_config(nlohmann::json& config) const {
  config["momentum"] = momentum_;
  config["nesterov"] = nesterov_;
}

}  // namespace osprey::optim
