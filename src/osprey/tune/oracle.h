// Oracle: the half of a search that decides — it owns the search space, every trial and its
// state, proposes hyperparameter values, and is told the metrics; the Tuner (the other half)
// only builds and trains models. The interface is a handful of calls on plain, JSON-serializable
// data, KerasTuner's oracle interface, so an oracle can sit behind an RPC service
// (oracle_service.h) with tuners as workers without changing either side:
//   Trial t = oracle.create_trial("tuner0");          // status running, or stopped when done
//   oracle.update_trial(t.trial_id, {{"val_loss", 0.41}}, /*epoch=*/0);
//   oracle.end_trial(t.trial_id, TrialStatus::completed);
//   auto best = oracle.get_best_trials(3);
// With a directory the oracle persists itself after every change (oracle.json, and
// trial_<id>/trial.json per trial, written atomically) and reload() resumes it: ended trials
// are kept, a trial found running (its process died) is handed out again with the same values
// and the epochs it reported, so a tuner can resume it from its last backup.
// The calls a tuner makes (create/update/end_trial, update_space, refresh) are virtual: a tuner
// worker's oracle forwards them to the chief's oracle service (oracle_service.h).
// A pruner (PrunerOptions) may answer update_trial with stopped: the median rule stops a trial
// whose best value so far is worse than the median of other trials' best values at that epoch.
// Subclasses implement populate_space(); random numbers come from one Philox stream whose
// position is part of the state, so a resumed search proposes what the uninterrupted one would.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "osprey/tune/hyperparameters.h"
#include "osprey/tune/objective.h"
#include "osprey/tune/trial.h"

namespace osprey::tune {

// Early stopping of unpromising trials (Golovin et al., "Google Vizier", KDD 2017: the median
// stopping rule; Optuna's MedianPruner). After epoch e (e >= warmup_epochs) a trial is stopped
// when its best objective value up to e is worse than the median of the best values up to e of
// the other trials that reported epoch e, once at least min_trials of them did. A stopped trial
// ends completed with what it trained, and its message says it was pruned.
// An enum, not a string: GCC 12 warns (-Wmaybe-uninitialized, a false positive) about a string
// in this struct nested in the flat tuner options when a designated initializer skips it.
enum class PrunerKind { none, median };
// "none" / "median" <-> PrunerKind; ValueError naming `where` for another name.
PrunerKind parse_pruner_kind(const std::string& name, const std::string& where);
const char* pruner_kind_name(PrunerKind kind);

struct PrunerOptions {
  PrunerKind kind = PrunerKind::none;
  int min_trials = 3;
  int warmup_epochs = 1;  // epochs every trial trains before it may be stopped

  bool operator==(const PrunerOptions&) const = default;
};

struct OracleOptions {
  Objective objective = "val_loss";
  int max_trials = 10;                // trials created, failed ones included; 0: no limit
  std::optional<uint64_t> seed{};     // default: drawn from the global seed
  HyperParameters hyperparameters{};  // a space given up front (the build function may add to it)
  PrunerOptions pruner{};

  bool operator==(const OracleOptions&) const = default;
};

class Oracle {
 public:
  explicit Oracle(OracleOptions options);
  virtual ~Oracle() = default;
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  virtual const char* class_name() const = 0;

  // Persist into project_dir from now on (created if needed).
  void set_directory(std::filesystem::path project_dir);
  const std::filesystem::path& directory() const { return dir_; }
  std::filesystem::path trial_dir(const std::string& trial_id) const;
  // Loads oracle.json and every trial.json from the directory; false when there is none. IoError
  // when the directory holds another kind of search or a file is malformed.
  bool reload();

  // Adds hyperparameters a build function declared that the space lacks.
  virtual void update_space(const HyperParameters& hp);
  // A running trial with values to try; status stopped when the search is over, idle when the
  // oracle must wait for running trials to end first. An interrupted trial (requeue_trial, or
  // found running by reload) comes first, with the epochs it already reported.
  virtual Trial create_trial(const std::string& tuner_id);
  // Metrics of one epoch of one execution; a report for an epoch already recorded replaces it
  // and the later ones (a resumed trial trains them again). Returns running, or stopped when the
  // pruner wants the trial cut short.
  virtual TrialStatus update_trial(const std::string& trial_id, const MetricValues& metrics,
                                   int epoch, int execution = 0);
  // Ends a trial. A completed trial without one finite objective value becomes failed, with the
  // reason in its message. Returns the ended trial.
  virtual Trial end_trial(const std::string& trial_id, TrialStatus status,
                          const std::string& message = "");
  // Brings the read-only view (trials(), get_best_trials, ...) up to date: a no-op here; a
  // worker's oracle fetches the chief's state.
  virtual void refresh() {}
  // Puts a running trial back in line, ahead of new ones, keeping what it reported (its worker
  // died or lost its lease): the next create_trial hands it out to resume.
  void requeue_trial(const std::string& trial_id);
  // The interrupted trials waiting to be handed out again, removed from the line: an oracle
  // service that restarts leases them to the workers still running them instead.
  std::vector<std::string> take_requeued();

  // Completed trials, best first (ties: the earlier trial).
  std::vector<Trial> get_best_trials(int n = 1) const;
  const Trial& get_trial(const std::string& trial_id) const;
  const std::vector<Trial>& trials() const { return trials_; }
  const HyperParameters& hyperparameters() const { return space_; }
  const Objective& objective() const { return options_.objective; }
  int max_trials() const { return options_.max_trials; }
  const OracleOptions& options() const { return options_; }
  // Failed trials since the last completed one.
  int consecutive_failures() const;

  // Everything needed to rebuild the oracle: options, space, random stream position, the
  // algorithm's own state, and (with_trials) every trial.
  nlohmann::json get_state(bool with_trials = true) const;
  void set_state(const nlohmann::json& state);

 protected:
  struct Proposal {
    TrialStatus status = TrialStatus::running;  // running, idle or stopped
    HyperParameters values{};                   // the space with the values to try
  };
  virtual Proposal populate_space(const std::string& trial_id) = 0;
  virtual nlohmann::json algorithm_state() const { return nlohmann::json::object(); }
  virtual void set_algorithm_state(const nlohmann::json& state) {}

  // The next uniform number in [0, 1) of the oracle's stream.
  double next_uniform();
  // A value for every active hyperparameter, in declaration order (parents before children).
  HyperParameters random_values();
  // Random values not tried before; nullopt after `tries` collisions (the space is exhausted).
  std::optional<HyperParameters> random_unseen_values(int tries = 100);
  // The canonical text of a trial's values, for duplicate detection.
  static std::string values_key(const HyperParameters& hp);
  bool seen(const HyperParameters& hp) const { return seen_.count(values_key(hp)) > 0; }
  // Completed trials with a score, in creation order.
  std::vector<const Trial*> completed_trials() const;
  Trial* find_trial(const std::string& trial_id);

  OracleOptions options_;
  HyperParameters space_;

 private:
  // Writes one trial's file and oracle.json (nothing without a directory).
  void save_trial(const Trial& t) const;
  void save_oracle() const;
  // The pruner's verdict on trial t after `epoch` of `execution`: a message when it stops it.
  std::optional<std::string> prune(const Trial& t, int execution, int epoch) const;

  std::filesystem::path dir_;
  uint64_t seed_ = 0;
  uint64_t counter_ = 0;
  std::vector<Trial> trials_;
  std::deque<std::string> retry_;  // interrupted trials to hand out again
  std::set<std::string> seen_;
};

}  // namespace osprey::tune
