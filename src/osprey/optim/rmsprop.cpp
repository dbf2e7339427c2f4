#include "osprey/optim/rmsprop.h"

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/optim/config_reader.h"

namespace osprey::optim {

namespace {

template <class C, bool kCentered, bool kMomentum>
struct RMSpropRule {
  using Params = RMSpropStep;
  explicit RMSpropRule(const RMSpropStep& p)
      : lr(static_cast<C>(p.learning_rate)),
        rho(static_cast<C>(p.rho)),
        one_minus_rho(static_cast<C>(1.0 - p.rho)),
        momentum(static_cast<C>(p.momentum)),
        eps(static_cast<C>(p.epsilon)) {}
  // s0: velocity, s1: momentum (momentum > 0), s2: average_gradient (centered).
  C operator()(C g, C w, C* __restrict v, C* __restrict mom, C* __restrict avg, int64_t i) const {
    const C vi = rho * v[i] + one_minus_rho * (g * g);
    v[i] = vi;
    C denominator = vi + eps;
    if constexpr (kCentered) {
      const C ai = rho * avg[i] + one_minus_rho * g;
      avg[i] = ai;
      denominator = vi - ai * ai + eps;
    }
    const C increment = (lr * g) / std::sqrt(denominator);
    if constexpr (!kMomentum) {
      return w - increment;
    } else {
      const C mi = momentum * mom[i] + increment;
      mom[i] = mi;
      return w - mi;
    }
  }
  C lr, rho, one_minus_rho, momentum, eps;
};
template <class C>
using RMSpropPlain = RMSpropRule<C, false, false>;
template <class C>
using RMSpropMomentum = RMSpropRule<C, false, true>;
template <class C>
using RMSpropCentered = RMSpropRule<C, true, false>;
template <class C>
using RMSpropCenteredMomentum = RMSpropRule<C, true, true>;

}  // namespace

RMSprop::RMSprop(RMSpropOptions o)
    : Optimizer(
          "RMSprop", common(o),
          {"velocity", o.momentum > 0.0 ? "momentum" : "", o.centered ? "average_gradient" : ""}),
      rho_(o.rho),
      momentum_(o.momentum),
      epsilon_(o.epsilon),
      centered_(o.centered) {
  OSPREY_CHECK(std::isfinite(o.rho) && o.rho >= 0.0 && o.rho < 1.0,
               "RMSprop: rho must be in [0, 1). Received: rho={}", o.rho);
  OSPREY_CHECK(std::isfinite(o.momentum) && o.momentum >= 0.0 && o.momentum < 1.0,
               "RMSprop: momentum must be in [0, 1). Received: momentum={}", o.momentum);
  OSPREY_CHECK(std::isfinite(o.epsilon) && o.epsilon >= 0.0,
               "RMSprop: epsilon must be >= 0. Received: epsilon={}", o.epsilon);
}

RMSprop RMSprop::from_config(const nlohmann::json& config) {
  detail::ConfigReader r(config, "RMSprop");
  RMSpropOptions o;
  OptimizerOptions c = common(o);
  read_config(r, c);
  set_common(o, c);
  o.rho = r.number("rho", o.rho);
  o.momentum = r.number("momentum", o.momentum);
  o.epsilon = r.number("epsilon", o.epsilon);
  o.centered = r.boolean("centered", o.centered);
  r.finish();
  return RMSprop(std::move(o));
}

std::unique_ptr<Optimizer> RMSprop::fresh_copy() const {
  RMSpropOptions o;
  set_common(o, options());
  o.rho = rho_;
  o.momentum = momentum_;
  o.epsilon = epsilon_;
  o.centered = centered_;
  return fresh<RMSprop>(std::move(o));
}

const void* RMSprop::prepare_step(double learning_rate, int64_t) {
  step_ = {learning_rate, rho_, momentum_, epsilon_};
  return &step_;
}

detail::KernelFn RMSprop::kernel(DType value, DType grad) const {
  const bool momentum = momentum_ > 0.0;
  if (centered_) {
    return momentum ? detail::kernel_for<RMSpropCenteredMomentum>(value, grad)
                    : detail::kernel_for<RMSpropCentered>(value, grad);
  }
  return momentum ? detail::kernel_for<RMSpropMomentum>(value, grad)
                  : detail::kernel_for<RMSpropPlain>(value, grad);
}

void RMSprop::add_config(nlohmann::json& config) const {
  config["rho"] = rho_;
  config["momentum"] = momentum_;
  config["epsilon"] = epsilon_;
  config["centered"] = centered_;
}

}  // namespace osprey::optim
