// Loss: the base of every loss object (Keras's keras.losses.Loss). A subclass computes the
// unreduced per-sample losses; the base applies sample weights, an optional mask (ignore_class,
// and the mask y_pred carries: Variable::mask(), the padded steps of a sequence, as Keras applies
// _keras_mask) and the reduction, so every loss weighs and reduces the same way.
// Concrete losses: crossentropy.h, binary_crossentropy.h, regression.h; by name: registry.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "osprey/autograd/variable.h"

namespace osprey::losses {

using autograd::Variable;

// How per-sample losses become the returned value (Keras's names):
//   sum_over_batch_size (also "mean"): sum(w * loss) / number of losses (valid ones under a mask)
//   sum: sum(w * loss);  none: w * loss, unreduced;
//   mean_with_sample_weight: sum(w * loss) / sum(w).
// An empty batch reduces to 0 (Keras's divide_no_nan).
enum class Reduction { sum_over_batch_size, sum, none, mean_with_sample_weight };
// Parses a reduction name; throws ValueError listing the valid names.
Reduction parse_reduction(const std::string& name, const char* loss);
const char* reduction_name(Reduction r) noexcept;

// Usage (every loss is a callable object, built from an options struct):
//   losses::SparseCategoricalCrossentropy loss({.from_logits = true});
//   Variable l = loss(labels, logits);                 // labels int64 [N], logits [N, C] -> scalar
//   l.backward();
//   Variable lw = loss(labels, logits, &weights);      // weights [N]: one per sample
//   losses::MeanSquaredError mse({.reduction = "none"});
//   Variable per_sample = mse(y, pred);                // [N]: averaged over the last axis
//   auto by_name = losses::get("huber");               // registry.h
// y_true is a plain Tensor (no gradient flows to targets); y_pred a Variable. The result is
// float32 (float64 when y_pred is float64), whatever y_pred's precision.
class Loss {
 public:
  // What a subclass computes: per-sample losses before weighting and reduction.
  struct Computed {
    Variable losses;  // [samples...]: y_pred's shape without the class/feature axis
    Tensor mask;      // 1 where a loss counts, 0 where it is ignored (losses there are finite
                      // but meaningless); undefined: all count
  };

  // class_name: a string literal, the Keras class name; name: the loss's name (subclasses pass
  // their Keras default when the user gave none).
  Loss(const char* class_name, std::string name, const std::string& reduction);
  virtual ~Loss() = default;

  // The reduced, weighted loss. sample_weight broadcasts against the per-sample losses: a scalar,
  // their shape (a trailing size-1 axis is accepted), or a prefix of it ([N] for losses [N, T]).
  Variable operator()(const Tensor& y_true, const Variable& y_pred,
                      const Tensor* sample_weight = nullptr) const;
  // The per-sample losses, unweighted and unreduced (masked entries are 0).
  Variable call(const Tensor& y_true, const Variable& y_pred) const;

  const std::string& name() const noexcept { return name_; }
  Reduction reduction() const noexcept { return reduction_; }
  // The Keras class name ("SparseCategoricalCrossentropy"), for serialization.
  const char* class_name() const noexcept { return class_name_; }
  // Keras's config: {"name", "reduction"} plus each loss's own fields.
  virtual nlohmann::json get_config() const;

 protected:
  virtual Computed compute(const Tensor& y_true, const Variable& y_pred) const = 0;

 private:
  const char* class_name_;
  std::string name_;
  Reduction reduction_;
};

}  // namespace osprey::losses
