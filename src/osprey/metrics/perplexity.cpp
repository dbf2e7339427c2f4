#include "osprey/metrics/perplexity.h"

#include <algorithm>
#include <cmath>

#include "osprey/metrics/metric_inputs.h"

namespace osprey::metrics {

Perplexity::Perplexity(PerplexityOptions options)
    : Metric("Perplexity", options.name), options_(std::move(options)) {}

void Perplexity::update_state(const Tensor& y_true, const Tensor& y_pred,
                              const Tensor* sample_weight) {
  const bool logits = options_.from_logits;
  const char* who = "Perplexity";
  const Shape lead = detail::score_sparse_rows(
      y_true, y_pred, who, losses_, [&](double label, const auto* row, int64_t classes) {
        const auto c = static_cast<int64_t>(label);
        if (options_.mask_token_id && c == *options_.mask_token_id) return 0.0;
        OSPREY_CHECK(c >= 0 && c < classes && static_cast<double>(c) == label,
                     "Perplexity: token id {} is outside the vocabulary [0, {})", label, classes);
        if (!logits) {  // Keras's clipped probabilities
          return -std::log(std::clamp(static_cast<double>(row[c]), 1e-7, 1.0 - 1e-7));
        }
        double top = static_cast<double>(row[0]);
        for (int64_t j = 1; j < classes; ++j) top = std::max(top, static_cast<double>(row[j]));
        double sum = 0;
        for (int64_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(row[j]) - top);
        return top + std::log(sum) - static_cast<double>(row[c]);
      });
  const Tensor labels = detail::host_numbers(y_true);
  const detail::Weights w(sample_weight, lead, who);
  const int64_t samples = lead.ndim() == 0 ? 1 : lead[0];
  const int64_t per = samples > 0 ? lead.numel() / samples : 0;
  detail::visit_numbers(labels, [&](const auto* t) {
    for (int64_t i = 0; i < samples; ++i) {
      for (int64_t j = 0; j < per; ++j) {
        const int64_t k = i * per + j;
        const bool masked =
            options_.mask_token_id && static_cast<int64_t>(t[k]) == *options_.mask_token_id;
        if (!masked) mean_.add(losses_[static_cast<size_t>(k)], w.at(i, j));
      }
    }
  });
}

double Perplexity::result() const { return std::exp(mean_.result()); }

nlohmann::json Perplexity::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["from_logits"] = options_.from_logits;
  c["mask_token_id"] =
      options_.mask_token_id ? nlohmann::json(*options_.mask_token_id) : nlohmann::json();
  return c;
}

}  // namespace osprey::metrics
