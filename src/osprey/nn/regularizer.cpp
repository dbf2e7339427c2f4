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
  OSPREY_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(),
               "regularizer config must be {{\"class_name\": \"L1\", \"L2\" or \"L1L2\", "
               "\"config\": {{...}}}}. Received: {}",
               j.dump());
  const std::string cls = j["class_name"].get<std::string>();
  const nlohmann::json c = j.value("config", nlohmann::json::object());
  // Keras's defaults: L1(l1=0.01), L2(l2=0.01), L1L2(l1=0.0, l2=0.0). Any other class (Keras's
  // OrthogonalRegularizer, a custom one) is not a penalty osprey can compute.
  if (cls == "L1") return l1(c.value("l1", 0.01));
  if (cls == "L2") return l2(c.value("l2", 0.01));
  OSPREY_CHECK(cls == "L1L2", "unknown regularizer class '{}'. Known: L1, L2, L1L2", cls);
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
