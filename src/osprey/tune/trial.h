// Trial: one set of hyperparameter values and what became of it — status, the metrics of every
// epoch of every execution, the score (the objective averaged over executions, each at its best
// epoch), the best epoch, and the error of a failed trial. Trials are plain data the oracle owns
// and hands out by value, and they round-trip through trial.json (the same JSON the oracle
// service sends over the wire, oracle.proto).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/tune/hyperparameters.h"
#include "osprey/tune/objective.h"

namespace osprey::tune {

// running: handed to a worker; idle: the oracle has nothing to hand out yet (it waits for
// running trials, e.g. a Hyperband round); stopped: the search is over; completed / failed /
// invalid: ended.
enum class TrialStatus { running, idle, completed, failed, invalid, stopped };
const char* status_name(TrialStatus s);
TrialStatus parse_status(const std::string& s, const std::string& where);
// IoError naming `where` unless id is 1-64 letters, digits, '_' or '-': a trial's id names its
// folder (trial_<id>), so one read from a file must not reach outside the study ("../x").
void check_trial_id(const std::string& id, const std::string& where);
// An integer field of a study's state files (trial.json, oracle.json): v when it is an integer
// within int's range, else IoError "<where>: <field> must be an integer ..." (nlohmann's
// get<int>() would cast a float such as 1e72, which is undefined behaviour).
int state_int(const nlohmann::json& v, const std::string& where, const char* field);

using MetricValues = std::vector<std::pair<std::string, double>>;

struct EpochRecord {
  int epoch = 0;
  MetricValues metrics;
};

struct Trial {
  std::string trial_id;
  HyperParameters hyperparameters;
  TrialStatus status = TrialStatus::running;
  std::optional<double> score{};
  int best_step = -1;                                // the best epoch (0-based)
  std::vector<std::vector<EpochRecord>> executions;  // [execution][epoch in order of report]
  std::map<std::string, double> metrics;  // averaged over executions, at each one's best epoch
  std::string message;                    // why a trial failed

  bool ended() const {
    return status == TrialStatus::completed || status == TrialStatus::failed ||
           status == TrialStatus::invalid;
  }
  // Fills score, best_step and metrics from the executions; false when no epoch reported a finite
  // objective (the caller fails the trial).
  bool compute_score(const Objective& objective);

  nlohmann::json to_json() const;
  static Trial from_json(const nlohmann::json& j, const std::string& where);
};

}  // namespace osprey::tune
