// LossScaleOptimizer: dynamic loss scaling around any optimizer (Keras 3's
// keras.optimizers.LossScaleOptimizer, the seeds' mixed_float16 recipe). The loss is multiplied by
// a large scale before backward so that small float16 gradients do not underflow; apply() checks
// every gradient, and either unscales them and runs the inner optimizer, or (on any inf/NaN)
// skips the update and halves the scale. After `dynamic_growth_steps` finite steps in a row the
// scale doubles. It is an Optimizer, so compile() takes it (and wraps the optimizer in one by
// itself under the mixed_float16 policy, as Keras). For a fixed scale use the
// `loss_scale_factor` option every optimizer has.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "osprey/optim/optimizer.h"

namespace osprey::optim {

struct LossScaleOptions {
  double initial_scale = 32768.0;  // 2^15, as Keras
  int64_t dynamic_growth_steps = 2000;
  std::string name = "loss_scale_optimizer";
};

// Usage (a custom training step; the seeds' get_scaled_loss / get_unscaled_gradients):
//   LossScaleOptimizer opt(std::make_unique<Adam>(AdamOptions{.learning_rate = 1e-3}));
//   opt.scale_loss(loss).backward();   // loss * scale()
//   opt.apply(weights);                // skipped (weights untouched) when a gradient overflowed
//   opt.scale(); opt.skipped_steps();
//   auto j = optim::serialize(opt);    // {"class_name": "LossScaleOptimizer", "config": {...}}
// Or, to look at the true gradients first: opt.unscale_gradients(weights) divides them in place.
// Learning rate, iterations, slots and weight-decay exclusions are the inner optimizer's; state()
// adds the scale and its counters, so a resumed run continues with the same scale.
class LossScaleOptimizer : public Optimizer {
 public:
  // Shared, so compile() can wrap an optimizer the user still holds (a unique_ptr converts).
  explicit LossScaleOptimizer(std::shared_ptr<Optimizer> inner, LossScaleOptions options = {});

  // apply_if_finite, for code that holds an Optimizer.
  void apply(const std::vector<autograd::Variable>& variables) override;
  // One step: if every gradient is finite, divides them by scale() in place and runs the inner
  // optimizer (returns true); otherwise changes no weight and no gradient, halves the scale and
  // returns false.
  bool apply_if_finite(const std::vector<autograd::Variable>& variables);

  autograd::Variable scale_loss(const autograd::Variable& loss) const override;
  double scale_loss(double loss) const override { return loss * scale_; }
  // Divides every gradient by scale() in place (for custom steps that then call the inner
  // optimizer themselves). Returns false when some gradient is inf or NaN.
  bool unscale_gradients(const std::vector<autograd::Variable>& variables) const;
  // True when every gradient of these variables is finite.
  static bool all_finite(const std::vector<autograd::Variable>& variables);

  double scale() const noexcept { return scale_; }
  int64_t skipped_steps() const noexcept { return skipped_; }
  // Finite steps since the scale last changed.
  int64_t good_steps() const noexcept { return good_steps_; }
  // Steps taken by the inner optimizer (skipped steps are not counted, as Keras).
  int64_t iterations() const noexcept override { return inner_->iterations(); }
  double learning_rate() const override { return inner_->learning_rate(); }
  const LearningRate& learning_rate_option() const noexcept override {
    return inner_->learning_rate_option();
  }
  void set_learning_rate(LearningRate learning_rate) override;
  void exclude_from_weight_decay(std::vector<std::string> var_names) override;
  Optimizer& inner() const noexcept { return *inner_; }
  const LossScaleOptions& loss_scale_options() const noexcept { return o_; }

  // Keras's: {"name", "inner_optimizer": serialize(inner), "initial_scale",
  // "dynamic_growth_steps"}; from_config() reverses it.
  nlohmann::json get_config() const override;
  static LossScaleOptimizer from_config(const nlohmann::json& config);
  // The inner optimizer's fresh copy (it holds the exclusions), wrapped at the initial scale.
  std::unique_ptr<Optimizer> fresh_copy() const override;
  // The inner optimizer's state plus "<prefix>/loss_scale" (float64),
  // "<prefix>/loss_scale_good_steps" and "<prefix>/loss_scale_skipped_steps" (int64).
  std::vector<std::pair<std::string, Tensor>> state(
      std::string_view prefix = "optimizer") const override;
  void load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                  std::string_view prefix = "optimizer") override;
  std::vector<std::string> slot_names() const override { return inner_->slot_names(); }
  Tensor slot(std::string_view variable_path, std::string_view slot_name) const override {
    return inner_->slot(variable_path, slot_name);
  }
  const SlotOrigin& slot_origin() const noexcept override { return inner_->slot_origin(); }

 protected:
  // Never reached: apply() hands the update to the inner optimizer.
  const void* prepare_step(double learning_rate, int64_t step) override;
  detail::KernelFn kernel(DType value, DType grad) const override;
  void add_config(nlohmann::json& config) const override {}

 private:
  std::shared_ptr<Optimizer> inner_;
  LossScaleOptions o_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace osprey::optim
