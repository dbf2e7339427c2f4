// BayesianOptimizationOracle: after num_initial_points random trials, each proposal fits a
// Gaussian process (gaussian_process.h) to the completed trials — hyperparameters mapped to
// [0, 1] by HyperParameter::to_unit, so log-sampled ones are on a log scale — and proposes the
// values that optimize the acquisition: the lower confidence bound mean - beta * std (of the
// objective turned into a quantity to minimize; KerasTuner's "upper confidence bound" of the
// score) or expected improvement. The acquisition is evaluated on num_candidates random points
// and the best few are refined by a shrinking coordinate search. Defaults are KerasTuner's:
// num_initial_points 3 x the number of tunable hyperparameters, alpha 1e-4, beta 2.6.
#pragma once

#include <string>

#include "osprey/tune/gaussian_process.h"
#include "osprey/tune/oracle.h"

namespace osprey::tune {

struct BayesianOptimizationOracleOptions {
  int num_initial_points = 0;     // 0: 3 x the tunable hyperparameters (at least 2)
  double alpha = 1e-4;            // GP noise variance (standardized objective)
  double beta = 2.6;              // exploration weight of the confidence bound
  std::string acquisition = "ucb";  // "ucb" or "ei"
  int num_candidates = 1000;
  int num_refined = 5;
};

class BayesianOptimizationOracle : public Oracle {
 public:
  BayesianOptimizationOracle(OracleOptions options, BayesianOptimizationOracleOptions bo = {});
  const char* class_name() const override { return "BayesianOptimization"; }

 protected:
  Proposal populate_space(const std::string& trial_id) override;

 private:
  // Coordinates of a trial's values over the tunable hyperparameters (defaults where inactive).
  std::vector<double> to_vector(const HyperParameters& hp, const std::vector<const HyperParameter*>& dims) const;
  // The space with values from u (one coordinate per tunable dimension), respecting conditions.
  HyperParameters from_vector(const std::vector<double>& u, const std::vector<const HyperParameter*>& dims) const;

  BayesianOptimizationOracleOptions bo_;
};

}  // namespace osprey::tune
