#include "osprey/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "osprey/core/error.h"
#include "osprey/optim/config_reader.h"

namespace osprey::optim {

namespace {

template <class C, bool kAmsgrad>
struct AdamRule {
  using Params = AdamStep;
  explicit AdamRule(const AdamStep& p)
      : alpha(static_cast<C>(p.alpha)),
        omb1(static_cast<C>(p.one_minus_beta_1)),
        omb2(static_cast<C>(p.one_minus_beta_2)),
        eps(static_cast<C>(p.epsilon)) {}
  // s0: momentum (m), s1: velocity (v), s2: velocity_hat (amsgrad only).
  C operator()(C g, C w, C* __restrict m, C* __restrict v, C* __restrict v_hat, int64_t i) const {
    const C mi = m[i] + (g - m[i]) * omb1;
    C vi = v[i] + (g * g - v[i]) * omb2;
    m[i] = mi;
    v[i] = vi;
    if constexpr (kAmsgrad) {
      vi = std::max(v_hat[i], vi);
      v_hat[i] = vi;
    }
    return w - (mi * alpha) / (std::sqrt(vi) + eps);
  }
  C alpha, omb1, omb2, eps;
};
template <class C>
using AdamPlain = AdamRule<C, false>;
template <class C>
using AdamAmsgrad = AdamRule<C, true>;

void check_unit(const char* owner, const char* field, double v) {
  OSPREY_CHECK(std::isfinite(v) && v >= 0.0 && v < 1.0, "{}: {} must be in [0, 1). Received: {}={}",
               owner, field, field, v);
}

}  // namespace

Adam::Adam(AdamOptions o) : Adam("Adam", common(o), o.beta_1, o.beta_2, o.epsilon, o.amsgrad) {}

Adam::Adam(std::string class_name, OptimizerOptions common_options, double beta_1, double beta_2,
           double epsilon, bool amsgrad)
    : Optimizer(class_name, std::move(common_options),
                {"momentum", "velocity", amsgrad ? "velocity_hat" : ""}),
      beta_1_(beta_1),
      beta_2_(beta_2),
      epsilon_(epsilon),
      amsgrad_(amsgrad) {
  check_unit(class_name.c_str(), "beta_1", beta_1);
  check_unit(class_name.c_str(), "beta_2", beta_2);
  OSPREY_CHECK(std::isfinite(epsilon) && epsilon >= 0.0,
               "{}: epsilon must be >= 0. Received: epsilon={}", class_name, epsilon);
}

Adam Adam::from_config(const nlohmann::json& config) {
  detail::ConfigReader r(config, "Adam");
  AdamOptions o;
  OptimizerOptions c = common(o);
  read_config(r, c);
  set_common(o, c);
  o.beta_1 = r.number("beta_1", o.beta_1);
  o.beta_2 = r.number("beta_2", o.beta_2);
  o.epsilon = r.number("epsilon", o.epsilon);
  o.amsgrad = r.boolean("amsgrad", o.amsgrad);
  r.finish();
  return Adam(std::move(o));
}

std::unique_ptr<Optimizer> Adam::fresh_copy() const {
  AdamOptions o;
  set_common(o, options());
  o.beta_1 = beta_1_;
  o.beta_2 = beta_2_;
  o.epsilon = epsilon_;
  o.amsgrad = amsgrad_;
  return fresh<Adam>(std::move(o));
}

const void* Adam::prepare_step(double learning_rate, int64_t step) {
  const double t = static_cast<double>(step);
  step_.alpha =
      learning_rate * std::sqrt(1.0 - std::pow(beta_2_, t)) / (1.0 - std::pow(beta_1_, t));
  step_.one_minus_beta_1 = 1.0 - beta_1_;
  step_.one_minus_beta_2 = 1.0 - beta_2_;
  step_.epsilon = epsilon_;
  return &step_;
}

detail::KernelFn Adam::kernel(DType value, DType grad) const {
  return amsgrad_ ? detail::kernel_for<AdamAmsgrad>(value, grad)
                  : detail::kernel_for<AdamPlain>(value, grad);
}

void Adam::add_config(nlohmann::json& config) const {
  config["beta_1"] = beta_1_;
  config["beta_2"] = beta_2_;
  config["epsilon"] = epsilon_;
  config["amsgrad"] = amsgrad_;
}

AdamW::AdamW(AdamWOptions o) : Adam("AdamW", common(o), o.beta_1, o.beta_2, o.epsilon, o.amsgrad) {}

AdamW AdamW::from_config(const nlohmann::json& config) {
  detail::ConfigReader r(config, "AdamW");
  AdamWOptions o;
  OptimizerOptions c = common(o);
  read_config(r, c);
  OSPREY_CHECK(c.weight_decay.has_value(),
               "AdamW: weight_decay must be a number. Received: weight_decay=None");
  set_common(o, c);
  o.beta_1 = r.number("beta_1", o.beta_1);
  o.beta_2 = r.number("beta_2", o.beta_2);
  o.epsilon = r.number("epsilon", o.epsilon);
  o.amsgrad = r.boolean("amsgrad", o.amsgrad);
  r.finish();
  return AdamW(std::move(o));
}

std::unique_ptr<Optimizer> AdamW::fresh_copy() const {
  AdamWOptions o;
  set_common(o, options());
  o.beta_1 = beta_1();
  o.beta_2 = beta_2();
  o.epsilon = epsilon();
  o.amsgrad = amsgrad();
  return fresh<AdamW>(std::move(o));
}

}  // namespace osprey::optim
