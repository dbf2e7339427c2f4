// Optimizer: the base of SGD, Adam, AdamW and RMSprop (Keras 3's keras.optimizers.Optimizer).
// It owns what every optimizer shares: the learning rate (constant or Schedule of iterations()),
// loss-scale unscaling, gradient clipping, decoupled weight decay, the step counter, slot
// variables keyed by variable path, Keras-style configs, and state for exact resume. A step is
// one fused pass over all parameters (fused_update.h) that allocates nothing after the first.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/optim/fused_update.h"
#include "osprey/optim/schedules.h"
#include "osprey/tensor/tensor.h"

namespace osprey::optim {

namespace detail {
class ConfigReader;
}

// Options every optimizer takes (each optimizer's own options struct repeats them, so that
// designated initializers read like Keras's keyword arguments).
struct OptimizerOptions {
  LearningRate learning_rate = 0.001;
  // Decoupled: w -= w * weight_decay * lr, every step.
  std::optional<double> weight_decay = std::nullopt;
  // Per variable: g * clipnorm / max(|g|, clipnorm).
  std::optional<double> clipnorm = std::nullopt;
  // g clamped to [-clipvalue, clipvalue].
  std::optional<double> clipvalue = std::nullopt;
  // All gradients scaled together by clip / max(global norm, clip).
  std::optional<double> global_clipnorm = std::nullopt;
  // Gradients are divided by it before anything else.
  std::optional<double> loss_scale_factor = std::nullopt;
  std::string name = "";
};

// Usage (the trainer's step; Adam's options are in adam.h):
//   Adam opt({.learning_rate = 1e-3, .clipnorm = 1.0});
//   Variable loss = model_loss(batch);
//   opt.scale_loss(loss).backward();     // loss * loss_scale_factor when one is set
//   opt.apply(model_weights);            // uses each weight's grad(), skips those without one
//   for (auto& w : model_weights) w.zero_grad();
//   opt.set_learning_rate(opt.learning_rate() * 0.1);  // ReduceLROnPlateau
//   auto saved = opt.state();            // "optimizer/iterations", "optimizer/<path>/momentum"...
//   Adam resumed = Adam::from_config(opt.get_config());  resumed.load_state(saved);
// Order within a step, as Keras: divide by loss_scale_factor, clip (clipnorm, global_clipnorm or
// clipvalue: at most one), decay the weight with the step's learning rate, then the update rule.
// Variables must be contiguous, named (their path keys the slots) and float64, float32,
// bfloat16 or float16; gradients may be any of those four.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;  // slots would be shared between the copies
  Optimizer& operator=(const Optimizer&) = delete;
  Optimizer(Optimizer&&) noexcept = default;
  Optimizer& operator=(Optimizer&&) noexcept = default;

  // One update of every variable that has a gradient; then iterations() += 1. An empty list
  // does nothing; a non-empty one where no variable has a gradient is a ValueError (Keras).
  // Checks everything before writing anything, so a throw leaves weights and slots unchanged.
  // Virtual, like the accessors below, so a wrapper (LossScaleOptimizer) can stand wherever an
  // Optimizer does and forward to the optimizer it wraps.
  virtual void apply(const std::vector<autograd::Variable>& variables);

  virtual int64_t iterations() const noexcept { return iterations_; }
  // The rate the next apply() uses: the schedule at iterations().
  virtual double learning_rate() const { return o_.learning_rate(iterations_); }
  virtual const LearningRate& learning_rate_option() const noexcept { return o_.learning_rate; }
  // Replaces the rate: a constant (for ReduceLROnPlateau or LearningRateScheduler callbacks:
  // it replaces a schedule too) or a new schedule. Throws ValueError for a negative constant.
  virtual void set_learning_rate(LearningRate learning_rate);

  const std::string& class_name() const noexcept { return class_name_; }  // "Adam"
  const std::string& name() const noexcept { return o_.name; }
  const OptimizerOptions& options() const noexcept { return o_; }

  // Fixed loss scaling (Keras 3's loss_scale_factor, the seeds' mixed-precision recipe): the
  // trainer backpropagates scale_loss(loss) instead of loss; apply() divides the gradients by
  // the factor before clipping, so clipping and updates see the true gradients. Without a
  // factor both return their argument.
  virtual autograd::Variable scale_loss(const autograd::Variable& loss) const;
  virtual double scale_loss(double loss) const;

  // Variables whose path contains any of these strings get no weight decay (Keras's
  // exclude_from_weight_decay(var_names=...), e.g. {"bias", "layer_norm"}).
  virtual void exclude_from_weight_decay(std::vector<std::string> var_names);

  // Keras's get_config(): name, learning_rate (number or {"class_name", "config"}),
  // weight_decay, clipnorm, global_clipnorm, clipvalue, use_ema, ema_momentum,
  // ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, and the
  // optimizer's own fields. Each subclass's static from_config() reverses it.
  virtual nlohmann::json get_config() const;

  // A new optimizer of this class with the same options (learning rate or schedule, clipping,
  // weight decay and its exclusions, loss scaling) and no slots or steps: what each replica of a
  // data-parallel strategy trains with, built once. Built directly rather than through
  // get_config(), which holds no weight-decay exclusions (Keras's config has no field for them).
  virtual std::unique_ptr<Optimizer> fresh_copy() const = 0;

  // Everything an exact resume needs: "<prefix>/iterations" (an int64 scalar) and
  // "<prefix>/<variable path>/<slot>" for every slot. The slot tensors alias the optimizer's:
  // write or clone them before the next apply().
  virtual std::vector<std::pair<std::string, Tensor>> state(
      std::string_view prefix = "optimizer") const;
  // Replaces iterations and every slot with the entries of state() (copied); throws ValueError
  // (and changes nothing) for an entry that is not this optimizer's, a variable missing one of
  // its slots, or no iterations entry.
  virtual void load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                          std::string_view prefix = "optimizer");

  // The slots this optimizer keeps per variable ("momentum", "velocity", ...).
  virtual std::vector<std::string> slot_names() const;
  // A variable's slot, undefined before its first update (or when the slot does not exist).
  virtual Tensor slot(std::string_view variable_path, std::string_view slot_name) const;
  // Where the slots came from: the distribution scope (autograd/creation_scope.h) open when the
  // first of them was created, and that variable's path; both empty before any slot exists.
  // The trainer refuses an optimizer whose slots belong to another strategy.
  struct SlotOrigin {
    std::string scope, variable;
  };
  virtual const SlotOrigin& slot_origin() const noexcept { return slot_origin_; }

 protected:
  // slot_names: per kernel slot position (s0, s1, s2); empty where the optimizer keeps none.
  Optimizer(std::string class_name, OptimizerOptions options,
            std::array<std::string, detail::kMaxSlots> slot_names);

  // Fills the kernel's constants for update number `step` (1 for the first) and returns them;
  // the pointer must stay valid until apply() returns (point at a member).
  virtual const void* prepare_step(double learning_rate, int64_t step) = 0;
  virtual detail::KernelFn kernel(DType value, DType grad) const = 0;
  // Adds the optimizer's own fields to config.
  virtual void add_config(nlohmann::json& config) const = 0;

  // Reads the shared fields of a config into options (the caller reads its own, then finish()).
  static void read_config(detail::ConfigReader& reader, OptimizerOptions& options);
  // fresh_copy's shared part: a T built from `options`, given this one's weight-decay exclusions.
  template <class T, class O>
  std::unique_ptr<Optimizer> fresh(O options) const {
    auto copy = std::make_unique<T>(std::move(options));
    copy->exclude_from_weight_decay(exclude_from_weight_decay_);
    return copy;
  }
  // Copies the shared fields between an optimizer's own options struct and OptimizerOptions.
  template <class O>
  static OptimizerOptions common(const O& o) {
    return {o.learning_rate,   o.weight_decay,      o.clipnorm, o.clipvalue,
            o.global_clipnorm, o.loss_scale_factor, o.name};
  }
  template <class O>
  static void set_common(O& o, const OptimizerOptions& c) {
    o.learning_rate = c.learning_rate;
    if constexpr (std::is_same_v<decltype(o.weight_decay), double>) {
      if (c.weight_decay) o.weight_decay = *c.weight_decay;
    } else {
      o.weight_decay = c.weight_decay;
    }
    o.clipnorm = c.clipnorm;
    o.clipvalue = c.clipvalue;
    o.global_clipnorm = c.global_clipnorm;
    o.loss_scale_factor = c.loss_scale_factor;
    o.name = c.name;
  }

 private:
  struct SlotSet {
    std::array<Tensor, detail::kMaxSlots> tensors;
    int64_t seen_in_call = -1;  // the apply() call that last used it: catches duplicate names
    bool decay = true;          // not excluded from weight decay
  };
  SlotSet& slots_for(const autograd::Variable& v, int64_t call);
  bool uses_weight_decay(std::string_view path) const;
  void clip_gradients(double inv_scale);
  void run_tasks(const void* params);

  std::string class_name_;
  OptimizerOptions o_;
  std::array<std::string, detail::kMaxSlots> slot_names_;
  int64_t iterations_ = 0;
  int64_t apply_calls_ = 0;
  std::map<std::string, SlotSet, std::less<>> slots_;
  SlotOrigin slot_origin_;
  std::vector<std::string> exclude_from_weight_decay_;
  std::vector<detail::VarTask> tasks_;  // reused every step: no allocation after the first
  std::vector<double> partials_;        // per-block partial sums of the norm pass, reused
};

// The optimizer named "sgd", "adam", "adamw" or "rmsprop" with Keras's defaults; declared here
// too so that code holding an Optimizer can build one by name. Documented in factory.h.
std::unique_ptr<Optimizer> get(std::string_view name);

}  // namespace osprey::optim
