// Tuner: the half of a search that trains. It asks its Oracle for a trial, builds the model
// from the trial's values, trains it (executions_per_trial times, metrics averaged), reports
// every epoch to the oracle, keeps the trial's best weights in trial_<id>/checkpoint.safetensors
// (and, for a Hyperband trial that may be promoted, the state it ended in, in
// trial_<id>/resume.safetensors), and ends the trial — completed, or failed with the error
// when building or training throws (the search goes on until max_consecutive_failed_trials
// fail in a row). The study lives in directory/project_name; overwrite=false resumes it: ended
// trials are kept, a trial cut short by a crash is re-run. RandomSearch, BayesianOptimization
// and Hyperband (tuners.h) are Tuners with their oracle.
//   tune::RandomSearch tuner(build_model, {.objective = "val_accuracy", .max_trials = 10,
//                                          .directory = "kt", .project_name = "fmnist"});
//   tuner.search(x, y, {.epochs = 10, .validation_data = train::ValidationData(xv, yv)});
//   auto best = tuner.get_best_hyperparameters(1)[0];
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "osprey/data/labeled_arrays.h"
#include "osprey/tune/hypermodel.h"
#include "osprey/tune/oracle.h"

namespace osprey::tune {

// Throw from a build function or fit to mark the trial failed with a message (any exception
// does; this one says it on purpose).
class TrialFailed : public Error {
 public:
  using Error::Error;
};

struct TunerOptions {
  int executions_per_trial = 1;
  int max_consecutive_failed_trials = 3;
  std::string directory = ".";
  std::string project_name = "untitled_project";
  bool overwrite = false;
  int verbose = 1;  // 0 silent, 1 a table row per trial, 2 also the trial's values as it starts
  std::string tuner_id = "tuner0";
};

class Tuner {
 public:
  Tuner(HyperModelArg hypermodel, std::unique_ptr<Oracle> oracle, TunerOptions options);
  virtual ~Tuner() = default;

  // Runs trials until the oracle stops. Every trial fits with `options` (validation data,
  // callbacks — copied per trial where they support clone() — epochs, batch size, ...).
  void search(const Tensor& x, const Tensor& y, const train::FitOptions& options = {});
  void search(const data::Dataset& dataset, const train::FitOptions& options = {});
  void search(const data::LabeledArrays& data, const train::FitOptions& options = {}) { search(data.x, data.y, options); }

  // Prints (and returns) each hyperparameter with its range or values and default.
  std::string search_space_summary(bool print = true);
  // Prints (and returns) the best n trials: values and score; failed trials are counted.
  std::string results_summary(int n = 10, bool print = true) const;
  std::vector<HyperParameters> get_best_hyperparameters(int n = 1) const;
  // Rebuilt from the best trials' values with the weights of their best epoch.
  std::vector<Model> get_best_models(int n = 1);

  Oracle& oracle() { return *oracle_; }
  const Oracle& oracle() const { return *oracle_; }
  HyperModel& hypermodel() { return *hypermodel_; }
  const std::filesystem::path& project_dir() const { return project_dir_; }
  std::filesystem::path checkpoint_path(const std::string& trial_id) const;
  // Where the end state of a Hyperband trial that may be promoted is kept, when its best epoch
  // was not its last: a trial promoted from it goes on from there.
  std::filesystem::path resume_path(const std::string& trial_id) const;

 protected:
  // One trial: every execution built, trained and reported. Throws to fail the trial.
  virtual void run_trial(const Trial& trial, const TrainData& data, const train::FitOptions& options);

 private:
  void run_search(const TrainData& data, const train::FitOptions& options);
  void populate_initial_space();
  void print_row(const Trial& t, double seconds);

  std::shared_ptr<HyperModel> hypermodel_;
  std::unique_ptr<Oracle> oracle_;
  TunerOptions options_;
  std::filesystem::path project_dir_;
  Shape sample_shape_{};
  bool header_printed_ = false;
};

// A trial's checkpoint: the model's weights in variable order (names are the variable paths,
// which differ between builds: "dense" then "dense_1"), the sample shape so an unbuilt model
// can be built first, and, for a compiled model, its optimizer state (iterations and slots,
// named by variable index) so a promoted trial takes the very next step its parent would have.
// IoError naming the file on a count or shape mismatch, or an optimizer state that does not fit.
void save_trial_weights(const std::filesystem::path& path, const Model& model, const Shape& sample_shape);
// The weights only (get_best_models).
void load_trial_weights(const std::filesystem::path& path, Model& model);
// Weights and, when the model is compiled and the file has one, the optimizer state.
void load_trial_checkpoint(const std::filesystem::path& path, Model& model);

}  // namespace osprey::tune
