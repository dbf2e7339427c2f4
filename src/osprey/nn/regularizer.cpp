#include "osprey/nn/regularizer.h"

#include "osprey/autograd/ops.h"

namespace osprey::nn {

Regularizer Regularizer::l1_l2(double l1, double l2) {
  OSPREY_CHECK(l1 >= 0 && l2 >= 0,
               "Regularizer: factors must be non-negative. Received: l1={}, l2={}", l1, l2);
  Regularizer r;
  r.l1_ = l1;
  r.l2_ = l2;
  return r;
}
Regularizer Regularizer::l1(double l1) { return l1_l2(l1, 0.0); }
Regularizer Regularizer::l2(double l2) { return l1_l2(0.0, l2); }

Regularizer Regularizer::from_json(const nlohmann::json& j) {
  if (j.is_null()) return {};
  const nlohmann::json c = j.value("config", nlohmann::json::object());
  return l1_l2(c.value("l1", 0.0), c.value("l2", 0.0));
}

autograd::Variable Regularizer::operator()(const autograd::Variable& w) const {
  using namespace autograd;
  Variable penalty;
  if (l1_ != 0.0) penalty = sum(abs(w)) * l1_;
  if (l2_ != 0.0) {
    Variable p2 = sum(square(w)) * l2_;
    penalty = penalty.defined() ? penalty + p2 : p2;
  }
  return penalty;
}

nlohmann::json Regularizer::to_json() const {
  if (!*this) return nullptr;
  const char* cls = l1_ == 0.0 ? "L2" : l2_ == 0.0 ? "L1" : "L1L2";
  nlohmann::json c;
  if (l1_ != 0.0) c["l1"] = l1_;
  if (l2_ != 0.0) c["l2"] = l2_;
  return {{"class_name", cls}, {"config", c}};
}

}  // namespace osprey::nn
