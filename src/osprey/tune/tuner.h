// Tuner: the half of a search that trains. It asks its Oracle for a trial, builds the model
// from the trial's values (in a fresh nn::NameScope, so every build of one architecture names
// its weights alike), trains it (executions_per_trial times, metrics averaged), reports every
// epoch to the oracle, keeps the trial's best state in trial_<id>/checkpoint/ (an ordinary saved
// model, trial_checkpoint.h), and ends the trial: completed, or failed when the build or fit
// throws TrialFailed or ValueError (the search goes on until max_consecutive_failed_trials fail
// in a row). Any other error stops the search with that error; the trial stays running on disk,
// so a resumed search runs it again. The study lives in directory/project_name; overwrite=false
// resumes it: ended trials are kept, a trial cut short is re-run. Whenever the best state is
// saved, the tuner also predicts the validation rows with it and, when the trial completes,
// keeps those predictions in trial_<id>/val_predictions.safetensors (validation_predictions), so
// an ensemble of the best trials needs no retraining. RandomSearch,
// BayesianOptimization and Hyperband (builtin_tuners.h) are Tuners with their oracle; a subclass
// adjusts a trial through run_trial, prepare_model and keeps_end_state.
//   tune::RandomSearch tuner(build_model, {.objective = "val_accuracy", .max_trials = 10,
//                                          .directory = "kt", .project_name = "fmnist"});
//   tuner.search(x, y, {.epochs = 10, .validation_data = train::ValidationData(xv, yv)});
//   auto best = tuner.get_best_hyperparameters(1)[0];
// Each execution of a trial is backed up at every epoch end (trial_<id>/backup/, BackupAndRestore)
// until the trial ends, so a trial cut short (a killed process, a worker that lost its lease)
// resumes at its last epoch, with the epochs it reported kept.
// Distributed tuning (oracle_service.h): with OSPREY_TUNER_ID and OSPREY_ORACLE_IP/PORT set, the
// same program is the chief, whose search() serves the oracle and returns when the study is over,
// or a worker, whose search() trains the trials the chief hands out. Workers share the study's
// directory (one host, or a shared filesystem) for trial checkpoints and backups. The loop itself
// is the Study's (study.h), which command trials share; the Tuner is its in-process runner.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/data/labeled_arrays.h"
#include "osprey/tune/hypermodel.h"
#include "osprey/tune/oracle.h"
#include "osprey/tune/oracle_service.h"
#include "osprey/tune/study.h"

namespace osprey::tune {

// Throw from a build function or fit to mark the trial failed with a message (a ValueError
// does too); any other error stops the search.
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
  // 0 silent; 1 a row per trial: its score, the best so far, trials done of max_trials, time
  // elapsed and an estimate of what is left; 2 also the trial's values as it starts.
  int verbose = 1;
  std::string tuner_id = "tuner0";
  // Wall-clock seconds for one search() call (0: no limit). Once spent, no trial starts and the
  // running trial stops after its current batch; that epoch is still validated and reported, so
  // the trial completes with what it trained. A time budget for the search as a whole.
  double max_seconds = 0;

  bool operator==(const TunerOptions&) const = default;
};

// A trial's best state's predictions on the validation rows fit scored it on, in their order.
struct TrialPredictions {
  Tensor predictions;  // [N, C] float32: model.predict of the best state
  Tensor targets;      // the validation labels as given (y of validation_data, or the split rows)
};

class Tuner {
 public:
  Tuner(HyperModelArg hypermodel, std::unique_ptr<Oracle> oracle, TunerOptions options);
  virtual ~Tuner() = default;

  // Runs trials until the oracle stops. Every trial fits with `options` (validation data,
  // callbacks — copied per trial where they support clone() — epochs, batch size, ...). Returns
  // why it stopped (study.h). A worker of `osprey launch --tuners N --trials-per-process K`
  // returns StudyEnd::share_done after K trials: its program should then exit with
  // kExitNextTrial, for launch to start a fresh process in its place.
  StudyEnd search(const Tensor& x, const Tensor& y, const train::FitOptions& options = {});
  StudyEnd search(const data::Dataset& dataset, const train::FitOptions& options = {});
  StudyEnd search(const data::LabeledArrays& data, const train::FitOptions& options = {}) {
    return search(data.x, data.y, options);
  }

  // Prints (and returns) each hyperparameter with its range or values and default.
  std::string search_space_summary(bool print = true);
  // Prints (and returns) the best n trials: values and score; failed trials are counted.
  std::string results_summary(int n = 10, bool print = true) const;
  std::vector<HyperParameters> get_best_hyperparameters(int n = 1) const;
  // Rebuilt from the best trials' values with the weights of their best epoch.
  std::vector<Model> get_best_models(int n = 1);
  // The validation predictions of trial_id's best state (those of the execution whose checkpoint
  // is kept), read from validation_predictions_path: equal, bit for bit, to predicting the
  // validation rows with get_best_models' model at the validation batch size. Kept for
  // validation_data tensors, validation_split rows and a validation dataset of (x, y) batches
  // (predicted batch by batch in the dataset's epoch-0 order). IoError naming the file when the
  // trial kept none: it failed, did not finish, or ran without validation data.
  TrialPredictions validation_predictions(const std::string& trial_id) const;

  // This process's part in a distributed study (not distributed: neither chief nor worker).
  const TunerRole& role() const { return study_->role(); }
  Oracle& oracle() { return study_->oracle(); }
  const Oracle& oracle() const { return study_->oracle(); }
  HyperModel& hypermodel() { return *hypermodel_; }
  const std::filesystem::path& project_dir() const { return study_->options().directory; }
  std::filesystem::path checkpoint_path(const std::string& trial_id) const;
  // Where the state a trial ended in is kept when keeps_end_state(trial) asked for it and its
  // best epoch was not its last (when it was, the checkpoint already is that state).
  std::filesystem::path end_state_path(const std::string& trial_id) const;
  // trial_<id>/val_predictions.safetensors: tensors "predictions" and "targets".
  std::filesystem::path validation_predictions_path(const std::string& trial_id) const;

 protected:
  // One trial: every execution built, prepared, trained and reported. Throws to fail the trial
  // (TrialFailed, ValueError) or to stop the search (anything else).
  virtual void run_trial(const Trial& trial, const TrainData& data,
                         const train::FitOptions& options);
  // Called for every execution between build and fit, inside the build's name scope: a subclass
  // may load weights into the model here. Default: nothing.
  virtual void prepare_model(const Trial& trial, Model& model) {}
  // Whether another trial may go on from this one, so the state it ends in is kept
  // (end_state_path) besides its best epoch's. Default: false.
  virtual bool keeps_end_state(const Trial& trial) const { return false; }
  // Loads into model the state trial_id ended in, weights and optimizer state: its kept end
  // state, or its checkpoint when its best epoch was its last.
  void load_end_state(const std::string& trial_id, Model& model) const;

 private:
  StudyEnd run_search(const TrainData& data, const train::FitOptions& options);
  // Runs the trial (run_trial) and ends it in the oracle: completed, or failed when it threw
  // TrialFailed or ValueError.
  Trial run_and_end(const Trial& trial, const TrainData& data, const train::FitOptions& options);
  void populate_initial_space();
  void print_row(const Trial& t, double seconds);

  std::shared_ptr<HyperModel> hypermodel_;
  TunerOptions options_;
  std::unique_ptr<Study> study_;
  bool header_printed_ = false;
  std::chrono::steady_clock::time_point search_start_{};  // of the running search's rows
};

}  // namespace osprey::tune
