// RMSprop, Keras 3's formulas (epsilon inside the square root, unlike PyTorch's sqrt(v) + eps):
//   v = rho * v + (1 - rho) * g^2
//   centered: a = rho * a + (1 - rho) * g;  denominator = v - a^2 + epsilon
//   otherwise: denominator = v + epsilon
//   increment = lr * g / sqrt(denominator)
//   momentum > 0: mom = momentum * mom + increment;  w -= mom      otherwise: w -= increment
// Slots: "velocity", "momentum" (momentum > 0), "average_gradient" (centered).
//   RMSprop rms({.learning_rate = 1e-3, .rho = 0.9, .centered = true});
#pragma once

#include "osprey/optim/optimizer.h"

namespace osprey::optim {

struct RMSpropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;       // in [0, 1)
  double momentum = 0.0;  // in [0, 1)
  double epsilon = 1e-7;  // >= 0
  bool centered = false;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  std::optional<double> loss_scale_factor = std::nullopt;
  std::string name = "rmsprop";
};

struct RMSpropStep {
  double learning_rate = 0.0;
  double rho = 0.0;
  double momentum = 0.0;
  double epsilon = 0.0;
};

class RMSprop final : public Optimizer {
 public:
  explicit RMSprop(RMSpropOptions options = {});
  static RMSprop from_config(const nlohmann::json& config);
  std::unique_ptr<Optimizer> fresh_copy() const override;

  double rho() const noexcept { return rho_; }
  double momentum() const noexcept { return momentum_; }
  double epsilon() const noexcept { return epsilon_; }
  bool centered() const noexcept { return centered_; }

 protected:
  const void* prepare_step(double learning_rate, int64_t step) override;
  detail::KernelFn kernel(DType value, DType grad) const override;
  void add_config(nlohmann::json& config) const override;

 private:
  double rho_, momentum_, epsilon_;
  bool centered_;
  RMSpropStep step_;
};

}  // namespace osprey::optim
