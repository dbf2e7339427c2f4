// Ensemble::from_tuner: the ensemble module sits above tune (tests/check_layering.py), so a
// search's best trials become members without tune knowing about ensembles.
#include <fmt/format.h>

#include <cstring>

#include "osprey/core/error.h"
#include "osprey/ensemble/ensemble.h"
#include "osprey/tune/tuner.h"

namespace osprey::ensemble {

namespace {

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

}  // namespace

Ensemble Ensemble::from_tuner(tune::Tuner& tuner, int top_k, const std::string& combiner,
                              const CombinerOptions& options) {
  OSPREY_CHECK(top_k >= 1, "Ensemble.from_tuner: top_k must be at least 1. Received: top_k={}",
               top_k);
  const std::vector<tune::Trial> trials = tuner.oracle().get_best_trials(top_k);
  OSPREY_CHECK(!trials.empty(), "Ensemble.from_tuner: the search in {} has no completed trial",
               tuner.project_dir().string());
  std::vector<Model> models = tuner.get_best_models(static_cast<int>(trials.size()));
  Ensemble ens;
  std::vector<Tensor> predictions;
  Tensor targets;
  for (size_t i = 0; i < trials.size(); ++i) {
    tune::TrialPredictions p = tuner.validation_predictions(trials[i].trial_id);
    if (i == 0) {
      targets = p.targets;
    } else {
      OSPREY_CHECK(same_values(p.targets, targets),
                   "Ensemble.from_tuner: trial {} was scored on other validation rows than trial "
                   "{} (targets {} against {}); weights need every member's predictions on the "
                   "same rows",
                   trials[i].trial_id, trials[0].trial_id, p.targets.shape().to_string(),
                   targets.shape().to_string());
    }
    ens.add(models[i], fmt::format("trial_{}", trials[i].trial_id));
    predictions.push_back(p.predictions);
  }
  ens.fit_weights_from_predictions(predictions, targets, combiner, options);
  return ens;
}

}  // namespace osprey::ensemble
