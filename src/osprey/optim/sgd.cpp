#include "osprey/optim/sgd.h"

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/optim/config_reader.h"

namespace osprey::optim {

namespace {

template <class C, bool kMomentum, bool kNesterov>
struct SGDRule {
  using Params = SGDStep;
  explicit SGDRule(const SGDStep& p)
      : lr(static_cast<C>(p.learning_rate)), momentum(static_cast<C>(p.momentum)) {}
  // s0: momentum (velocity), present when momentum > 0.
  C operator()(C g, C w, C* __restrict m, C*, C*, int64_t i) const {
    if constexpr (!kMomentum) {
      return w - g * lr;
    } else {
      const C mi = m[i] * momentum - g * lr;
      m[i] = mi;
      if constexpr (kNesterov) return w + (mi * momentum - g * lr);
      return w + mi;
    }
  }
  C lr, momentum;
};
template <class C>
using SGDPlain = SGDRule<C, false, false>;
template <class C>
using SGDMomentum = SGDRule<C, true, false>;
template <class C>
using SGDNesterov = SGDRule<C, true, true>;

}  // namespace

SGD::SGD(SGDOptions o)
    : Optimizer("SGD", common(o), {o.momentum != 0.0 ? "momentum" : "", "", ""}),
      momentum_(o.momentum),
      nesterov_(o.nesterov) {
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

std::unique_ptr<Optimizer> SGD::fresh_copy() const {
  SGDOptions o;
  set_common(o, options());
  o.momentum = momentum_;
  o.nesterov = nesterov_;
  return fresh<SGD>(std::move(o));
}

const void* SGD::prepare_step(double learning_rate, int64_t) {
  step_ = {learning_rate, momentum_};
  return &step_;
}

detail::KernelFn SGD::kernel(DType value, DType grad) const {
  if (momentum_ == 0.0) return detail::kernel_for<SGDPlain>(value, grad);
  if (nesterov_) return detail::kernel_for<SGDNesterov>(value, grad);
  return detail::kernel_for<SGDMomentum>(value, grad);
}

void SGD::add_config(nlohmann::json& config) const {
  config["momentum"] = momentum_;
  config["nesterov"] = nesterov_;
}

}  // namespace osprey::optim
