#include "osprey/optim/loss_scale_optimizer.h"

#include <cmath>

#include "osprey/autograd/ops/elementwise.h"
#include "osprey/core/error.h"
#include "osprey/tensor/ops.h"

namespace osprey::optim {

using autograd::Variable;

LossScaleOptimizer::LossScaleOptimizer(std::unique_ptr<Optimizer> inner, LossScaleOptions options)
    : inner_(std::move(inner)), o_(options), scale_(options.initial_scale) {
  OSPREY_CHECK(inner_ != nullptr, "LossScaleOptimizer: inner optimizer must not be null");
  OSPREY_CHECK(std::isfinite(o_.initial_scale) && o_.initial_scale > 0.0,
               "LossScaleOptimizer: initial_scale must be > 0. Received: initial_scale={}",
               o_.initial_scale);
  OSPREY_CHECK(o_.dynamic_growth_steps > 0,
               "LossScaleOptimizer: dynamic_growth_steps must be positive. Received: "
               "dynamic_growth_steps={}",
               o_.dynamic_growth_steps);
  OSPREY_CHECK(!inner_->options().loss_scale_factor.has_value(),
               "LossScaleOptimizer: the inner {} already has loss_scale_factor={}; use one kind of "
               "loss scaling, not both",
               inner_->class_name(), *inner_->options().loss_scale_factor);
}

Variable LossScaleOptimizer::scale_loss(const Variable& loss) const { return autograd::mul(loss, scale_); }

bool LossScaleOptimizer::all_finite(const std::vector<Variable>& variables) {
  for (const Variable& v : variables) {
    if (!v.defined() || !v.has_grad() || v.grad().numel() == 0) continue;
    // The sum accumulates in double: it is finite exactly when every element is (a float32 or
    // float16 gradient cannot overflow a double sum), and costs one pass with no mask tensor.
    if (!std::isfinite(sum(v.grad().to(DType::float64)).item())) return false;
  }
  return true;
}

bool LossScaleOptimizer::unscale_gradients(const std::vector<Variable>& variables) const {
  if (!all_finite(variables)) return false;
  const double inv = 1.0 / scale_;
  for (const Variable& v : variables) {
    if (!v.defined() || !v.has_grad()) continue;
    Tensor g = v.grad();
    g.copy_(mul(g, inv));
  }
  return true;
}

bool LossScaleOptimizer::apply(const std::vector<Variable>& variables) {
  if (!unscale_gradients(variables)) {
    scale_ /= 2.0;
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  inner_->apply(variables);
  if (++good_steps_ >= o_.dynamic_growth_steps) {
    scale_ *= 2.0;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace osprey::optim
