// SGD: gradient descent with optional momentum and Nesterov momentum, Keras 3's formulas:
//   plain:     w -= lr * g
//   momentum:  m = momentum * m - lr * g;  w += m
//   nesterov:  m = momentum * m - lr * g;  w += momentum * m - lr * g
// The learning rate is folded into the velocity (unlike PyTorch, the same only while lr is
// constant). One slot, "momentum", when momentum > 0.
//   SGD sgd({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true});
#pragma once

#include "osprey/optim/optimizer.h"

namespace osprey::optim {

struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;  // in [0, 1]
  bool nesterov = false;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  std::optional<double> loss_scale_factor = std::nullopt;
  std::string name = "SGD";
};

struct SGDStep {
  double learning_rate = 0.0;
  double momentum = 0.0;
};

class SGD final : public Optimizer {
 public:
  explicit SGD(SGDOptions options = {});
  static SGD from_config(const nlohmann::json& config);
  std::unique_ptr<Optimizer> fresh_copy() const override;

  double momentum() const noexcept { return momentum_; }
  bool nesterov() const noexcept { return nesterov_; }

 protected:
  const void* prepare_step(double learning_rate, int64_t step) override;
  detail::KernelFn kernel(DType value, DType grad) const override;
  void add_config(nlohmann::json& config) const override;

 private:
  double momentum_;
  bool nesterov_;
  SGDStep step_;
};

}  // namespace osprey::optim
