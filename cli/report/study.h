// A tuner's study as `osprey report` draws it, read from the folder an osprey tune project (or
// osprey run's tune/ stage) writes: oracle.json (the tuner, its objective, the search space, the
// trial ids in the order they were created) and trial_<id>/trial.json (status, score, values and
// every epoch's metrics). Read as plain JSON, not through the Oracle, so that a report never
// changes the study and reads any tuner's folder; errors name the file and the field.
//   Study s = read_study("studies/cnn");
//   Curves c = s.curves_of(*s.best());   // through the Hyperband parents it was promoted from
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/report/history.h"
#include "cli/report/parallel_coordinates.h"

namespace osprey::cli::report {

// A hyperparameter of the search space: what its axis needs.
struct SpaceEntry {
  std::string name{};
  std::string kind{};                     // Int, Float, Choice, Boolean, Fixed
  bool log = false;                       // sampled on a log scale
  std::vector<std::string> categories{};  // Choice and Boolean values, as text
};

struct TrialInfo {
  std::string id{};
  std::string status{};  // completed, failed, invalid, running, ...
  std::optional<double> score{};
  int best_step = -1;                                   // 0-based epoch
  std::vector<std::pair<std::string, Cell>> values{};   // the trial's hyperparameter values
  std::vector<std::pair<std::string, double>> final{};  // metrics at the best epoch
  Curves curves{};                                      // its first execution's epochs
  int executions = 0;
  std::string message{};  // why it failed

  const Cell* value(const std::string& name) const;
};

struct Study {
  std::filesystem::path dir{};
  std::string tuner{};      // the oracle's class: RandomSearch, Hyperband, ...
  std::string objective{};  // val_accuracy
  bool maximize = true;
  std::vector<SpaceEntry> space{};
  std::vector<TrialInfo> trials{};  // in order of creation

  // The best trial with a score, or nullptr.
  const TrialInfo* best() const;
  // A trial's epochs, preceded by those of the trials it continues (Hyperband's and ASHA's
  // tuner/trial_id): the whole training of its weights.
  Curves curves_of(const TrialInfo& trial) const;
};

// Reads the study in `dir` (which holds oracle.json); IoError naming the file when a file is
// damaged or a listed trial.json is missing.
Study read_study(const std::filesystem::path& dir);

}  // namespace osprey::cli::report
