// Categorical cross-entropy losses: SparseCategoricalCrossentropy (class indices) and
// CategoricalCrossentropy (one-hot or soft targets), y_pred [..., C] with classes on the last axis.
//
// from_logits = true runs the fused log-softmax + cross-entropy kernel (autograd cross_entropy):
// stable for any logits. from_logits = false follows Keras: q = y_pred / sum(y_pred), clipped to
// [1e-7, 1 - 1e-7], loss = -sum(target * log(q)). Softmax fast path (as TF/Keras do): when
// from_logits is false but y_pred is the recorded output of autograd::softmax over the last axis
// (grad_fn()->op() == "softmax"), the loss is computed from the softmax's input logits with the
// fused kernel, and the gradient flows to the logits directly: the value equals the plain path
// wherever no probability is clipped, and stays exact (finite, non-saturating) where softmax
// underflows. Under NoGradGuard no graph is recorded, so the plain path runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "osprey/losses/loss.h"

namespace osprey::losses {

struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  // Labels equal to it contribute no loss and no gradient; sum_over_batch_size then averages over
  // the other labels only (Keras's mask). The ignored label may lie outside [0, C).
  std::optional<int64_t> ignore_class{};
  std::string reduction = "sum_over_batch_size";
  std::string name{};  // default "sparse_categorical_crossentropy"
};

// y_true: class indices of y_pred's leading shape [...] (a trailing size-1 axis is accepted):
// int32/int64, other integers, or floats holding integers (as Keras allows). Returns losses of
// shape [...] before reduction.
//   SparseCategoricalCrossentropy loss({.from_logits = true, .ignore_class = -1});
//   Variable l = loss(from_vector<int64_t>({2, -1, 0}), logits);   // logits [3, C]
class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});
  nlohmann::json get_config() const override;
  const SparseCategoricalCrossentropyOptions& options() const noexcept { return options_; }

 protected:
  Computed compute(const Tensor& y_true, const Variable& y_pred) const override;

 private:
  SparseCategoricalCrossentropyOptions options_;
};

struct CategoricalCrossentropyOptions {
  bool from_logits = false;
  // target = (1 - s) * y_true + s / C.
  double label_smoothing = 0.0;
  std::string reduction = "sum_over_batch_size";
  std::string name{};  // default "categorical_crossentropy"
};

// y_true: a float (or integer one-hot) tensor of y_pred's shape. Targets whose rows do not sum
// to 1 (multi-hot) are handled exactly too, off the fused kernel.
//   CategoricalCrossentropy loss({.label_smoothing = 0.1});
//   Variable l = loss(one_hot, autograd::softmax(logits));         // softmax fast path
class CategoricalCrossentropy : public Loss {
 public:
  explicit CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});
  nlohmann::json get_config() const override;
  const CategoricalCrossentropyOptions& options() const noexcept { return options_; }

 protected:
  Computed compute(const Tensor& y_true, const Variable& y_pred) const override;

 private:
  CategoricalCrossentropyOptions options_;
};

}  // namespace osprey::losses
