#include "osprey/optim/loss_scale_optimizer.h"

#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>

#include "osprey/autograd/ops/elementwise.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/optim/config_reader.h"
#include "osprey/optim/factory.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::optim {

namespace {

// The master gradients of mixed policies are contiguous float32: they are checked and unscaled
// in place every step, with no copy (a training step allocates nothing).
bool is_dense_f32(const Tensor& g) { return g.dtype() == DType::float32 && g.is_contiguous(); }

// Whether no element is inf or NaN: an exponent field of all ones, tested on the bits so the
// loop vectorizes (and fast-math could not fold it away).
bool finite_f32(const Tensor& g) {
  const float* p = g.data<float>();
  std::atomic<bool> finite{true};
  parallel_for(0, g.numel(), 1 << 16, [&](int64_t b, int64_t e) {
    uint32_t bad = 0;
    for (int64_t i = b; i < e; ++i)
      bad |= ((std::bit_cast<uint32_t>(p[i]) & 0x7f800000u) == 0x7f800000u);
    if (bad != 0) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

void scale_f32(Tensor& g, float factor) {
  float* p = g.data<float>();
  parallel_for(0, g.numel(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] *= factor;
  });
}

}  // namespace

using autograd::Variable;

namespace {

// The wrapper's own OptimizerOptions: the inner's learning rate (so options() reads sensibly),
// no clipping or decay of its own (the inner does those), and its own name.
OptimizerOptions wrapper_options(const std::shared_ptr<Optimizer>& inner,
                                 const LossScaleOptions& o) {
  OSPREY_CHECK(inner != nullptr, "LossScaleOptimizer: inner optimizer must not be null");
  OptimizerOptions w;
  w.learning_rate = inner->learning_rate_option();
  w.name = o.name;
  return w;
}

}  // namespace

LossScaleOptimizer::LossScaleOptimizer(std::shared_ptr<Optimizer> inner, LossScaleOptions options)
    : Optimizer("LossScaleOptimizer", wrapper_options(inner, options), {}),
      inner_(std::move(inner)),
      o_(std::move(options)),
      scale_(o_.initial_scale) {
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
  OSPREY_CHECK(dynamic_cast<const LossScaleOptimizer*>(inner_.get()) == nullptr,
               "LossScaleOptimizer: the inner optimizer is already a LossScaleOptimizer");
}

Variable LossScaleOptimizer::scale_loss(const Variable& loss) const {
  return autograd::mul(loss, scale_);
}

bool LossScaleOptimizer::all_finite(const std::vector<Variable>& variables) {
  for (const Variable& v : variables) {
    if (!v.defined() || !v.has_grad() || v.grad().numel() == 0) continue;
    const Tensor& g = v.grad();
    if (is_dense_f32(g)) {
      if (!finite_f32(g)) return false;
      continue;
    }
    // Other dtypes or layouts: the sum accumulates in double, so it is finite exactly when
    // every element is (a 16- or 32-bit gradient cannot overflow a double sum).
    if (!std::isfinite(sum(g.to(DType::float64)).item())) return false;
  }
  return true;
}

bool LossScaleOptimizer::unscale_gradients(const std::vector<Variable>& variables) const {
  if (!all_finite(variables)) return false;
  const double inv = 1.0 / scale_;
  for (const Variable& v : variables) {
    if (!v.defined() || !v.has_grad()) continue;
    Tensor g = v.grad();
    if (is_dense_f32(g)) {
      scale_f32(g, static_cast<float>(inv));
    } else {
      g.copy_(mul(g, inv));
    }
  }
  return true;
}

void LossScaleOptimizer::apply(const std::vector<Variable>& variables) {
  apply_if_finite(variables);
}

bool LossScaleOptimizer::apply_if_finite(const std::vector<Variable>& variables) {
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

void LossScaleOptimizer::set_learning_rate(LearningRate learning_rate) {
  inner_->set_learning_rate(learning_rate);
  Optimizer::set_learning_rate(std::move(learning_rate));
}

void LossScaleOptimizer::exclude_from_weight_decay(std::vector<std::string> var_names) {
  inner_->exclude_from_weight_decay(std::move(var_names));
}

nlohmann::json LossScaleOptimizer::get_config() const {
  return {{"name", o_.name},
          {"inner_optimizer", serialize(*inner_)},
          {"initial_scale", o_.initial_scale},
          {"dynamic_growth_steps", o_.dynamic_growth_steps}};
}

LossScaleOptimizer LossScaleOptimizer::from_config(const nlohmann::json& config) {
  detail::ConfigReader r(config, "LossScaleOptimizer");
  const nlohmann::json* inner = r.raw("inner_optimizer");
  OSPREY_CHECK(inner != nullptr,
               "LossScaleOptimizer: config field \"inner_optimizer\" is missing. Received: {}",
               config.dump());
  LossScaleOptions o;
  o.name = r.string("name", o.name);
  o.initial_scale = r.number("initial_scale", o.initial_scale);
  o.dynamic_growth_steps = r.integer("dynamic_growth_steps", o.dynamic_growth_steps);
  r.finish();
  return LossScaleOptimizer(deserialize(*inner), o);
}

std::vector<std::pair<std::string, Tensor>> LossScaleOptimizer::state(
    std::string_view prefix) const {
  auto out = inner_->state(prefix);
  out.emplace_back(fmt::format("{}/loss_scale", prefix), from_vector<double>({scale_}, Shape{}));
  out.emplace_back(fmt::format("{}/loss_scale_good_steps", prefix),
                   from_vector<int64_t>(std::vector<int64_t>{good_steps_}, Shape{}));
  out.emplace_back(fmt::format("{}/loss_scale_skipped_steps", prefix),
                   from_vector<int64_t>(std::vector<int64_t>{skipped_}, Shape{}));
  return out;
}

void LossScaleOptimizer::load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                                    std::string_view prefix) {
  const std::string scale_key = fmt::format("{}/loss_scale", prefix);
  const std::string good_key = scale_key + "_good_steps",
                    skipped_key = scale_key + "_skipped_steps";
  std::vector<std::pair<std::string, Tensor>> rest;
  std::optional<double> scale;
  int64_t good = 0, skipped = 0;
  for (const auto& [name, t] : state) {
    const bool ours = name == scale_key || name == good_key || name == skipped_key;
    if (!ours) {
      rest.emplace_back(name, t);
      continue;
    }
    OSPREY_CHECK(t.defined() && t.numel() == 1,
                 "LossScaleOptimizer: state entry \"{}\" must be a scalar. Received: {}", name,
                 t.defined() ? t.describe() : "an undefined tensor");
    if (name == scale_key) scale = t.item();
    if (name == good_key) good = static_cast<int64_t>(t.item());
    if (name == skipped_key) skipped = static_cast<int64_t>(t.item());
  }
  OSPREY_CHECK(scale.has_value() && std::isfinite(*scale) && *scale > 0.0,
               "LossScaleOptimizer: the state has no positive \"{}\" entry", scale_key);
  inner_->load_state(rest, prefix);  // checks the rest before anything of ours changes
  scale_ = *scale;
  good_steps_ = good;
  skipped_ = skipped;
}

std::unique_ptr<Optimizer> LossScaleOptimizer::fresh_copy() const {
  return std::make_unique<LossScaleOptimizer>(inner_->fresh_copy(), o_);
}

const void* LossScaleOptimizer::prepare_step(double, int64_t) {
  OSPREY_THROW(InternalError,
               "LossScaleOptimizer::prepare_step: the inner optimizer runs the update");
}

detail::KernelFn LossScaleOptimizer::kernel(DType, DType) const {
  OSPREY_THROW(InternalError, "LossScaleOptimizer::kernel: the inner optimizer runs the update");
}

}  // namespace osprey::optim
