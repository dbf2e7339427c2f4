// Adam and AdamW, Keras 3's formulas (epsilon is Kingma & Ba's "epsilon hat", added to sqrt(v),
// with both bias corrections folded into the step size). At update t (1 for the first):
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
//   amsgrad: v_hat = max(v_hat, v), used in place of v below
//   w -= alpha * m / (sqrt(v) + epsilon)
// PyTorch's Adam adds eps to sqrt(v / (1 - beta_2^t)) instead: the same update with
// eps_torch = epsilon / sqrt(1 - beta_2^t). AdamW is Adam with decoupled weight decay on by
// default (0.004, as Keras); Adam takes weight_decay too (Keras 3 decouples it everywhere).
// Slots: "momentum", "velocity", and "velocity_hat" with amsgrad.
//   Adam adam({.learning_rate = 1e-3, .amsgrad = true});
//   AdamW adamw({.learning_rate = 1e-3, .weight_decay = 0.01});
#pragma once

#include "osprey/optim/optimizer.h"

namespace osprey::optim {

struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;    // in [0, 1)
  double beta_2 = 0.999;  // in [0, 1)
  double epsilon = 1e-7;  // >= 0
  bool amsgrad = false;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  std::optional<double> loss_scale_factor = std::nullopt;
  std::string name = "adam";
};

// Keras's AdamW argument order: weight_decay comes second and is required (default 0.004).
struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  double weight_decay = 0.004;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  std::optional<double> loss_scale_factor = std::nullopt;
  std::string name = "adamw";
};

struct AdamStep {
  double alpha = 0.0;  // lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
  double one_minus_beta_1 = 0.0;
  double one_minus_beta_2 = 0.0;
  double epsilon = 0.0;
};

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});
  static Adam from_config(const nlohmann::json& config);
  std::unique_ptr<Optimizer> fresh_copy() const override;

  double beta_1() const noexcept { return beta_1_; }
  double beta_2() const noexcept { return beta_2_; }
  double epsilon() const noexcept { return epsilon_; }
  bool amsgrad() const noexcept { return amsgrad_; }

 protected:
  Adam(std::string class_name, OptimizerOptions common, double beta_1, double beta_2,
       double epsilon, bool amsgrad);
  const void* prepare_step(double learning_rate, int64_t step) override;
  detail::KernelFn kernel(DType value, DType grad) const override;
  void add_config(nlohmann::json& config) const override;

 private:
  double beta_1_, beta_2_, epsilon_;
  bool amsgrad_;
  AdamStep step_;
};

class AdamW final : public Adam {
 public:
  explicit AdamW(AdamWOptions options = {});
  // weight_decay must be a number (Keras rejects null for AdamW).
  static AdamW from_config(const nlohmann::json& config);
  std::unique_ptr<Optimizer> fresh_copy() const override;
};

}  // namespace osprey::optim
