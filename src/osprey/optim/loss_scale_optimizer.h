// LossScaleOptimizer: dynamic loss scaling around any optimizer (Keras 3's
// keras.optimizers.LossScaleOptimizer, the seeds' mixed_float16 recipe). The loss is multiplied by
// a large scale before backward so that small float16 gradients do not underflow; apply() checks
// every gradient, and either unscales them and runs the inner optimizer, or (on any inf/NaN)
// skips the update and halves the scale. After `dynamic_growth_steps` finite steps in a row the
// scale doubles. For a fixed scale use the `loss_scale_factor` option every optimizer has.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "osprey/optim/optimizer.h"

namespace osprey::optim {

struct LossScaleOptions {
  double initial_scale = 32768.0;  // 2^15, as Keras
  int64_t dynamic_growth_steps = 2000;
};

// Usage (a custom training step; the seeds' get_scaled_loss / get_unscaled_gradients):
//   LossScaleOptimizer opt(std::make_unique<Adam>(AdamOptions{.learning_rate = 1e-3}));
//   opt.scale_loss(loss).backward();   // loss * scale()
//   opt.apply(weights);                // false (and weights untouched) when a gradient overflowed
//   opt.scale(); opt.skipped_steps();
// Or, to look at the true gradients first: opt.unscale_gradients(weights) divides them in place.
class LossScaleOptimizer {
 public:
  explicit LossScaleOptimizer(std::unique_ptr<Optimizer> inner, LossScaleOptions options = {});

  // One step: if every gradient is finite, divides them by scale() in place and runs the inner
  // optimizer (returns true); otherwise changes no weight and no gradient, halves the scale and
  // returns false. Not wired into compile() yet: that comes with the mixed_float16 policy.
  bool apply(const std::vector<autograd::Variable>& variables);

  autograd::Variable scale_loss(const autograd::Variable& loss) const;
  double scale_loss(double loss) const { return loss * scale_; }
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
  int64_t iterations() const noexcept { return inner_->iterations(); }
  Optimizer& inner() const noexcept { return *inner_; }
  const LossScaleOptions& options() const noexcept { return o_; }

 private:
  std::unique_ptr<Optimizer> inner_;
  LossScaleOptions o_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace osprey::optim
