// The built-in tuners (RandomSearch, BayesianOptimization, Hyperband, Asha): each a Tuner (tuner.h,
// the base that trains trials in-process) bound to its oracle, with one flat options struct, so
// the call reads as KerasTuner's constructor:
//   tune::BayesianOptimization tuner(build_model, {.objective = "val_accuracy", .max_trials = 20,
//       .executions_per_trial = 2, .directory = "fmnist_kt", .overwrite = true});
//   tune::Hyperband hb(build_model, {.objective = "val_accuracy", .max_epochs = 27, .factor = 3});
// The flat structs repeat the fields of OracleOptions and TunerOptions (designated initializers
// cannot name a base's fields); detail::oracle_options and detail::tuner_options forward them,
// and a field added to either fails to compile below until it is forwarded and tested.
#pragma once

#include <optional>
#include <string>

#include "osprey/tune/asha.h"
#include "osprey/tune/bayesian_optimization.h"
#include "osprey/tune/hyperband.h"
#include "osprey/tune/random_search.h"
#include "osprey/tune/tuner.h"

namespace osprey::tune {

struct RandomSearchOptions {
  Objective objective = "val_loss";
  int max_trials = 10;
  int executions_per_trial = 1;
  int max_consecutive_failed_trials = 3;
  std::string directory = ".";
  std::string project_name = "untitled_project";
  bool overwrite = false;
  std::optional<uint64_t> seed{};
  HyperParameters hyperparameters{};
  PrunerOptions pruner{};  // OracleOptions::pruner: {.kind = PrunerKind::median} stops laggards
  int verbose = 1;
  std::string tuner_id = "tuner0";
  double max_seconds = 0;  // TunerOptions::max_seconds
};

struct BayesianOptimizationOptions {
  Objective objective = "val_loss";
  int max_trials = 10;
  int executions_per_trial = 1;
  int max_consecutive_failed_trials = 3;
  std::string directory = ".";
  std::string project_name = "untitled_project";
  bool overwrite = false;
  std::optional<uint64_t> seed{};
  HyperParameters hyperparameters{};
  PrunerOptions pruner{};  // OracleOptions::pruner: {.kind = PrunerKind::median} stops laggards
  int verbose = 1;
  std::string tuner_id = "tuner0";
  double max_seconds = 0;      // TunerOptions::max_seconds
  int num_initial_points = 0;  // 0: 3 x the tunable hyperparameters
  double alpha = 1e-4;
  double beta = 2.6;
  Acquisition acquisition = Acquisition::ucb;
};

struct HyperbandOptions {
  Objective objective = "val_loss";
  int max_epochs = 100;
  int factor = 3;
  int hyperband_iterations = 1;
  int max_trials = 0;  // 0: as many as the brackets need
  int executions_per_trial = 1;
  int max_consecutive_failed_trials = 3;
  std::string directory = ".";
  std::string project_name = "untitled_project";
  bool overwrite = false;
  std::optional<uint64_t> seed{};
  HyperParameters hyperparameters{};
  PrunerOptions pruner{};  // OracleOptions::pruner: {.kind = PrunerKind::median} stops laggards
  int verbose = 1;
  std::string tuner_id = "tuner0";
  double max_seconds = 0;  // TunerOptions::max_seconds
  // bayesian: new configurations from a Gaussian process over every rung (BOHB); see hyperband.h.
  HyperbandSampler sampler = HyperbandSampler::random;
  double random_fraction = 1.0 / 3;
  int num_initial_points = 0;  // scored trials before the model is used; 0: dimensions + 1
  double alpha = 1e-4;
  double beta = 2.6;  // with Acquisition::ucb
  Acquisition acquisition = Acquisition::ei;
};

struct AshaOptions {
  Objective objective = "val_loss";
  int max_epochs = 100;
  int min_epochs = 1;  // epochs of rung 0
  int factor = 3;
  int max_trials = 0;  // required positive: ASHA runs until it has created max_trials trials
  int executions_per_trial = 1;
  int max_consecutive_failed_trials = 3;
  std::string directory = ".";
  std::string project_name = "untitled_project";
  bool overwrite = false;
  std::optional<uint64_t> seed{};
  HyperParameters hyperparameters{};
  PrunerOptions pruner{};  // OracleOptions::pruner: {.kind = PrunerKind::median} stops laggards
  int verbose = 1;
  std::string tuner_id = "tuner0";
  double max_seconds = 0;  // TunerOptions::max_seconds
};

namespace detail {
// The number of fields of an aggregate: the most initializers T{...} accepts.
struct AnyField {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor): never defined, only for requires
};
template <class T, class... Fields>
constexpr size_t aggregate_arity() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; }) {
    return aggregate_arity<T, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

static_assert(aggregate_arity<OracleOptions>() == 5,
              "OracleOptions changed: forward the field in oracle_options and update "
              "TunerOptionsTest.FlatOptionsForwardEverySharedField");
static_assert(aggregate_arity<TunerOptions>() == 8,
              "TunerOptions changed: forward the field in tuner_options and update "
              "TunerOptionsTest.FlatOptionsForwardEverySharedField");

template <class O>
OracleOptions oracle_options(const O& o) {
  return {.objective = o.objective,
          .max_trials = o.max_trials,
          .seed = o.seed,
          .hyperparameters = o.hyperparameters,
          .pruner = o.pruner};
}
template <class O>
TunerOptions tuner_options(const O& o) {
  return {.executions_per_trial = o.executions_per_trial,
          .max_consecutive_failed_trials = o.max_consecutive_failed_trials,
          .directory = o.directory,
          .project_name = o.project_name,
          .overwrite = o.overwrite,
          .verbose = o.verbose,
          .tuner_id = o.tuner_id,
          .max_seconds = o.max_seconds};
}
}  // namespace detail

class RandomSearch : public Tuner {
 public:
  RandomSearch(HyperModelArg hypermodel, const RandomSearchOptions& o)
      : Tuner(std::move(hypermodel),
              std::make_unique<RandomSearchOracle>(detail::oracle_options(o)),
              detail::tuner_options(o)) {}
};

class BayesianOptimization : public Tuner {
 public:
  BayesianOptimization(HyperModelArg hypermodel, const BayesianOptimizationOptions& o)
      : Tuner(std::move(hypermodel),
              std::make_unique<BayesianOptimizationOracle>(
                  detail::oracle_options(o),
                  BayesianOptimizationOracleOptions{.num_initial_points = o.num_initial_points,
                                                    .alpha = o.alpha,
                                                    .beta = o.beta,
                                                    .acquisition = o.acquisition}),
              detail::tuner_options(o)) {}
};

class Hyperband : public Tuner {
 public:
  Hyperband(HyperModelArg hypermodel, const HyperbandOptions& o)
      : Hyperband(
            std::move(hypermodel),
            std::make_unique<HyperbandOracle>(
                detail::oracle_options(o),
                HyperbandOracleOptions{.max_epochs = o.max_epochs,
                                       .factor = o.factor,
                                       .hyperband_iterations = o.hyperband_iterations,
                                       .sampler = o.sampler,
                                       .bayesian = {.num_initial_points = o.num_initial_points,
                                                    .alpha = o.alpha,
                                                    .beta = o.beta,
                                                    .acquisition = o.acquisition},
                                       .random_fraction = o.random_fraction}),
            detail::tuner_options(o), o.max_epochs) {}

 protected:
  // For another successive-halving oracle (Asha): its trials carry the same tuner/ values.
  // max_epochs: the last rung's epochs; a trial that stopped short of it may be promoted.
  Hyperband(HyperModelArg hypermodel, std::unique_ptr<Oracle> oracle, TunerOptions options,
            int max_epochs)
      : Tuner(std::move(hypermodel), std::move(oracle), std::move(options)),
        max_epochs_(max_epochs) {}

  // In hyperband.cpp: epochs from the trial's values, a promoted trial loaded with the state its
  // parent ended in, and that state kept for every trial that may be promoted.
  void run_trial(const Trial& trial, const TrainData& data,
                 const train::FitOptions& options) override;
  void prepare_model(const Trial& trial, Model& model) override;
  bool keeps_end_state(const Trial& trial) const override;

 private:
  int max_epochs_;
};

// ASHA (asha.h): the Hyperband tuner over an AshaOracle, so a promoted trial resumes from its
// parent's end state. max_trials is required: ASHA never ends by itself.
//   tune::Asha asha(build_model, {.objective = "val_accuracy", .max_epochs = 27,
//                                 .max_trials = 60});
class Asha : public Hyperband {
 public:
  Asha(HyperModelArg hypermodel, const AshaOptions& o)
      : Hyperband(std::move(hypermodel),
                  std::make_unique<AshaOracle>(detail::oracle_options(o),
                                               AshaOracleOptions{.max_epochs = o.max_epochs,
                                                                 .min_epochs = o.min_epochs,
                                                                 .factor = o.factor}),
                  detail::tuner_options(o), o.max_epochs) {}
};

}  // namespace osprey::tune
