// Perplexity: exp of the mean cross-entropy per token, the figure of a language model
// (keras_nlp.metrics.Perplexity). y_true [batch, T] token ids, y_pred [batch, T, vocab]
// probabilities (or logits with from_logits); every token counts once, so a batch's padding does
// not change the weight of the others. Tokens equal to mask_token_id count as nothing. The state
// (the sums of cross-entropy and weight) reduces across replicas as every mean metric's does.
//   metrics::Perplexity ppl({.from_logits = true, .mask_token_id = 0});
//   ppl.update_state(targets, logits);   // [12, 64] int64, [12, 64, 65]
//   double p = ppl.result();             // exp(mean token cross-entropy)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "osprey/metrics/mean.h"

namespace osprey::metrics {

struct PerplexityOptions {
  bool from_logits = false;
  std::optional<int64_t> mask_token_id{};
  std::string name = "perplexity";
};

class Perplexity : public Metric {
 public:
  explicit Perplexity(PerplexityOptions options = {});
  void update_state(const Tensor& y_true, const Tensor& y_pred,
                    const Tensor* sample_weight = nullptr) override;
  // exp(mean cross-entropy); 1 before any token (the perplexity of certainty, as Keras's 0 loss).
  double result() const override;
  void reset_state() override { mean_.reset(); }
  std::vector<double> state_values() const override { return mean_.values(); }
  void load_state_values(const std::vector<double>& values) override { mean_.load(values, name()); }
  nlohmann::json get_config() const override;

 private:
  PerplexityOptions options_;
  WeightedMean mean_;
  std::vector<double> losses_;  // reused across batches
};

}  // namespace osprey::metrics
