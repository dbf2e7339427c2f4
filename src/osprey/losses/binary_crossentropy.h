// BinaryCrossentropy: one independent yes/no target per element, averaged over the last axis as
// Keras does (y_pred [N, D] -> losses [N]; a rank-1 y_pred [N] counts as [N, 1]).
// from_logits = true uses the stable form max(x, 0) - x * z + log(1 + exp(-|x|)) (gradient
// sigmoid(x) - z). from_logits = false follows Keras: p clipped to [1e-7, 1 - 1e-7], then
// -(z log p + (1 - z) log(1 - p)). Sigmoid fast path: when y_pred is the recorded output of
// autograd::sigmoid (grad_fn()->op() == "sigmoid"), the loss is computed from its input logits
// with the stable form (TF/Keras do the same). A sigmoid fused into a Dense's matmul records
// "linear" and so takes the plain path; keep such a layer's activation separate, or use
// from_logits = true, to get it.
#pragma once

#include <string>

#include "osprey/losses/loss.h"

namespace osprey::losses {

struct BinaryCrossentropyOptions {
  bool from_logits = false;
  // z = (1 - s) * y_true + s / 2.
  double label_smoothing = 0.0;
  std::string reduction = "sum_over_batch_size";
  std::string name{};  // default "binary_crossentropy"
};

//   BinaryCrossentropy loss({.from_logits = true});
//   Variable l = loss(targets, logits);           // targets in [0, 1], logits' shape
class BinaryCrossentropy : public Loss {
 public:
  explicit BinaryCrossentropy(BinaryCrossentropyOptions options = {});
  nlohmann::json get_config() const override;
  const BinaryCrossentropyOptions& options() const noexcept { return options_; }

 protected:
  Computed compute(const Tensor& y_true, const Variable& y_pred) const override;

 private:
  BinaryCrossentropyOptions options_;
};

}  // namespace osprey::losses
