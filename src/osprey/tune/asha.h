// AshaOracle: asynchronous successive halving (Li et al., "A System for Massively Parallel
// Hyperparameter Tuning", MLSys 2020, Algorithm 2). Rung k trains to r_k = min(max_epochs,
// min_epochs * factor^k) epochs, the last rung K to max_epochs exactly. Each create_trial
// promotes, from the highest rung down, the best trial among the top 1/factor of those completed
// at its rung that was not promoted before; when none is, it starts a new random configuration at
// rung 0. Unlike Hyperband's rounds it never waits for a rung to fill (never idle), so parallel
// workers are never left without work, at the price of promoting on partial rungs. It never ends
// by itself: the search stops at max_trials, which must be positive.
// Trials carry Hyperband's values (hyperband.h: kTunerRound = the rung, kTunerBracket = 0), so
// the Asha tuner (builtin_tuners.h) is the Hyperband tuner: a promoted trial resumes from its
// parent's end state at kTunerInitialEpoch.
//   AshaOracle oracle({.max_trials = 100, .hyperparameters = hp},
//                     {.max_epochs = 27, .min_epochs = 1, .factor = 3});  // rungs 1, 3, 9, 27
#pragma once

#include <set>
#include <string>
#include <vector>

#include "osprey/tune/hyperband.h"
#include "osprey/tune/oracle.h"

namespace osprey::tune {

struct AshaOracleOptions {
  int max_epochs = 100;
  int min_epochs = 1;  // epochs of rung 0
  int factor = 3;      // keep the top 1/factor of each rung; each rung trains factor times more
};

// The epochs of rungs 0..K: min(max_epochs, min_epochs * factor^k), ending at max_epochs.
// ValueError unless max_epochs >= 1, 1 <= min_epochs <= max_epochs and factor >= 2.
std::vector<int> asha_rungs(const AshaOracleOptions& options);

class AshaOracle : public Oracle {
 public:
  AshaOracle(OracleOptions options, AshaOracleOptions asha = {});
  const char* class_name() const override { return "ASHA"; }
  const std::vector<int>& rungs() const { return rungs_; }

 protected:
  Proposal populate_space(const std::string& trial_id) override;
  nlohmann::json algorithm_state() const override;
  void set_algorithm_state(const nlohmann::json& state) override;

 private:
  AshaOracleOptions asha_;
  std::vector<int> rungs_;
  std::set<std::string> promoted_;  // trials already promoted to the next rung
};

}  // namespace osprey::tune
