// Weight regularizers: a penalty added to the loss for each regularized weight, as Keras's
// L1, L2 and L1L2 (l1 * sum|w| + l2 * sum w^2).
//   layers::Dense(64, "relu", {.kernel_regularizer = Regularizer::l2(1e-4)})
#pragma once

#include <nlohmann/json.hpp>

#include "osprey/autograd/variable.h"

namespace osprey::nn {

class Regularizer {
 public:
  Regularizer() = default;
  static Regularizer l1(double l1);
  static Regularizer l2(double l2);
  static Regularizer l1_l2(double l1, double l2);
  // {"class_name": "L1" | "L2" | "L1L2", "config": {"l1": ..., "l2": ...}} as Keras writes it
  // (its "module" and "registered_name" are not read); null -> none. ValueError naming another
  // class.
  static Regularizer from_json(const nlohmann::json& j);

  explicit operator bool() const { return l1_ != 0.0 || l2_ != 0.0; }
  autograd::Variable operator()(const autograd::Variable& w) const;
  nlohmann::json to_json() const;  // null when none

 private:
  double l1_ = 0.0;
  double l2_ = 0.0;
};

}  // namespace osprey::nn
