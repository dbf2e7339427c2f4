// Study: the one loop of every tuning search, whatever runs its trials. It opens the study's
// directory for this process's role (a fresh or resumed local study; a worker's oracle forwarding
// to the chief; the chief, which serves the oracle and runs nothing), then asks the oracle for
// trials, hands each to a TrialRunner, reports how it ended, counts failures in a row, and stops
// when the oracle stops, the time budget is spent or this process has run its share of trials.
// Resuming is the oracle's: a trial left running on disk (the process died mid-trial) is handed
// out again, and the runner resumes it from its backups. Two runners exist: model trials trained
// in this process (Tuner, tuner.h) and command trials (`osprey tune --command`, command_trial.h).
//   Study study(std::move(oracle), {.directory = "kt/fmnist", .max_trials_failing = 3});
//   if (study.role().is_chief()) { study.serve(print_row); return; }
//   const StudyEnd end = study.run(runner, {.on_trial_end = print_row});
//   study.check_scored();
// The library never ends the process: a worker whose share of trials is done gets
// StudyEnd::share_done, and its program exits with kExitNextTrial for `osprey launch --tuners`
// to start a fresh one.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "osprey/tune/oracle.h"
#include "osprey/tune/oracle_service.h"

namespace osprey::tune {

// What a study does with one trial: runs it and ends it in the oracle (completed, or failed with
// why), returning the ended trial. TrialLost (the chief gave the trial to another worker) drops
// the trial; any other exception stops the study, the trial left running, so a resumed study
// runs it again.
class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  virtual Trial run(const Trial& trial) = 0;
};

// Why run() returned.
enum class StudyEnd {
  finished,    // the oracle stopped: no trial left to run
  time_spent,  // max_seconds ran out
  share_done,  // this worker ran trials_per_process trials; exit with kExitNextTrial
};

struct StudyOptions {
  std::filesystem::path directory{};  // the study's folder (DIRECTORY/PROJECT)
  // Start afresh: remove the folder first (never a worker's, nor a chief `osprey launch`
  // restarted: both resume it).
  bool overwrite = false;
  std::string tuner_id = "tuner0";  // a worker's comes from its role
  int max_trials_failing = 3;       // failed trials in a row that stop the study
  // How that limit is named in its message (empty: "max_consecutive_failed_trials=3").
  std::string failing_limit_text{};
  std::string message_prefix{};  // before every message ("osprey tune: ")
  // Wall-clock seconds for one run() (0: no limit); the runner may also stop a trial at the
  // deadline (deadline()).
  double max_seconds = 0;
  // Trials this process runs before run() returns share_done (0: no limit). A worker's default:
  // OSPREY_TUNER_TRIALS_PER_PROCESS, which `osprey launch --tuners` sets.
  std::optional<int> trials_per_process{};
  bool verbose = true;  // "trial X: dropped: ..." and the chief's "serving" line
  std::chrono::milliseconds idle_wait{250};  // between asks while other workers' trials run
};

struct StudyCallbacks {
  std::function<void(const Trial&)> on_trial_start{};
  // After the oracle was refreshed, so a row can show the study's best and progress.
  std::function<void(const Trial& ended, double seconds)> on_trial_end{};
};

class Study {
 public:
  // Opens the study for this process's role (tuner_role_from_env): a worker's oracle becomes a
  // client of the chief's; any other's is reloaded from the directory (after overwrite). Reads
  // OSPREY_TUNER_TRIALS_PER_PROCESS for a worker (ValueError naming it unless a count >= 0).
  Study(std::unique_ptr<Oracle> oracle, StudyOptions options);

  Oracle& oracle() { return *oracle_; }
  const Oracle& oracle() const { return *oracle_; }
  const TunerRole& role() const { return role_; }
  const StudyOptions& options() const { return options_; }

  // The chief's part: serves the oracle until the study is over, calling on_trial_end (under the
  // server's lock) as each trial ends, with the seconds since the previous one ended: with N
  // workers that is the study's pace.
  void serve(const std::function<void(const Trial& ended, double seconds)>& on_trial_end = {});

  // Everyone else's: runs trials until the oracle stops, the time is spent or the share is done.
  // Error naming the last failure when max_trials_failing trials fail in a row.
  StudyEnd run(TrialRunner& runner, const StudyCallbacks& callbacks = {});

  // The running run()'s deadline (max_seconds), for a runner that stops a trial at it.
  const std::optional<std::chrono::steady_clock::time_point>& deadline() const { return deadline_; }
  // This run()'s trials so far and their seconds (a progress row's estimate of what is left).
  int trials_run() const { return trials_run_; }
  double trial_seconds() const { return trial_seconds_; }

  // Error unless the study has a completed trial, naming the last failure.
  void check_scored();

 private:
  std::unique_ptr<Oracle> oracle_;
  StudyOptions options_;
  TunerRole role_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  int trials_run_ = 0;
  double trial_seconds_ = 0;
};

}  // namespace osprey::tune
