// BayesianOptimizationOracle: after num_initial_points random trials, each proposal fits a
// Gaussian process (gaussian_process.h) to the completed trials — hyperparameters mapped to
// [0, 1] by HyperParameter::to_unit, so log-sampled ones are on a log scale — and proposes the
// values that optimize the acquisition: the lower confidence bound mean - beta * std (of the
// objective turned into a quantity to minimize; KerasTuner's "upper confidence bound" of the
// score) or expected improvement. The acquisition is evaluated on num_candidates random points
// and the best few are refined by a shrinking coordinate search. Defaults are KerasTuner's:
// num_initial_points 3 x the number of tunable hyperparameters, alpha 1e-4, beta 2.6.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "osprey/tune/gaussian_process.h"
#include "osprey/tune/oracle.h"

namespace osprey::tune {

// What the proposal step minimizes over candidates: the lower confidence bound
// mean - beta * std of the GP's prediction, or minus the expected improvement over the best score.
enum class Acquisition { ucb, ei };
// "ucb" / "ei" <-> Acquisition; ValueError naming `where` for another name.
Acquisition parse_acquisition(const std::string& name, const std::string& where);
const char* acquisition_name(Acquisition acquisition);

struct BayesianOptimizationOracleOptions {
  int num_initial_points = 0;  // 0: 3 x the tunable hyperparameters (at least 2)
  double alpha = 1e-4;         // GP noise variance (standardized objective)
  double beta = 2.6;           // exploration weight of the confidence bound
  Acquisition acquisition = Acquisition::ucb;
  int num_candidates = 1000;
  int num_refined = 5;
};

// ValueError naming `who` ("BayesianOptimization", "Hyperband") for an option out of range.
void check_bayesian_options(const BayesianOptimizationOracleOptions& bo, const char* who);

// The proposal step of BayesianOptimizationOracle, shared with Hyperband's model-based sampler:
// a GP fitted to scored values of a space, and the acquisition search over it.
//   GaussianProcessSampler gp(space, bo);
//   for (const Trial* t : done) gp.observe(t->hyperparameters, -*t->score);  // lower is better
//   gp.pend(values_being_tried);       // proposed, not scored yet
//   auto next = gp.propose([&] { return next_uniform(); }, [&](const HyperParameters& v) { return
//   !seen(v); });
// Pending values enter the GP at its predicted mean (the "kriging believer"), so proposals made
// before any of them is scored spread out instead of repeating one point.
class GaussianProcessSampler {
 public:
  GaussianProcessSampler(const HyperParameters& space, BayesianOptimizationOracleOptions bo);
  // The tunable hyperparameters: the GP's input dimensions.
  size_t dimensions() const { return dims_.size(); }
  // A scored point: `loss` is the objective turned into a quantity to minimize. `context` are
  // extra GP inputs that are observed, not chosen (Hyperband's budget); every point needs the
  // same number of them.
  void observe(const HyperParameters& values, double loss, const std::vector<double>& context = {});
  void pend(const HyperParameters& values, const std::vector<double>& context = {});
  size_t observed() const { return y_.size(); }
  // The candidate with the best acquisition at `context` that `accept` takes (random
  // candidates, the best few refined by a shrinking coordinate search); nullopt when it takes
  // none. Needs at least one observation and one dimension.
  std::optional<HyperParameters> propose(const std::function<double()>& uniform,
                                         const std::function<bool(const HyperParameters&)>& accept,
                                         const std::vector<double>& context = {}) const;

 private:
  // Coordinates of values over the tunable hyperparameters (defaults where inactive).
  std::vector<double> to_vector(const HyperParameters& hp) const;
  // The space with values from u (one coordinate per tunable dimension), respecting conditions.
  HyperParameters from_vector(const std::vector<double>& u) const;

  const HyperParameters& space_;
  BayesianOptimizationOracleOptions bo_;
  std::vector<const HyperParameter*> dims_;
  std::vector<std::vector<double>> X_, pending_;  // coordinates, then context
  std::vector<double> y_;
  size_t context_size_ = 0;
};

class BayesianOptimizationOracle : public Oracle {
 public:
  BayesianOptimizationOracle(OracleOptions options, BayesianOptimizationOracleOptions bo = {});
  const char* class_name() const override { return "BayesianOptimization"; }

 protected:
  Proposal populate_space(const std::string& trial_id) override;

 private:
  BayesianOptimizationOracleOptions bo_;
};

}  // namespace osprey::tune
