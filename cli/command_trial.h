// One trial of `osprey tune --command` (tune_command.h): its program runs under /bin/sh -c in a
// process group of its own while its reports, read from its stdout and its metric file
// (tune/report_metric.h), go to the oracle, until it exits, the pruner stops it, it times out or
// it reports something unreadable. The study loop (run_command_study) calls it once per trial:
//   TrialSignalScope signals;  // Ctrl-C stops the running trial's program, then osprey
//   const tune::Trial ended = run_command_trial(oracle, oracle.create_trial("tuner0"), options);
#pragma once

#include "cli/tune_command.h"
#include "osprey/io/subprocess.h"
#include "osprey/tune/oracle.h"

namespace osprey::cli {

// For its life, SIGINT and SIGTERM stop the running trial's whole process group (a shell and
// what it started) and then kill osprey by the same signal; the old handlers come back after.
// The trial stays running in the oracle, so a rerun resumes it.
class TrialSignalScope {
 public:
  TrialSignalScope() : forwarding_(io::SignalForwarding::Target::group, /*die_after=*/true) {}

 private:
  io::SignalForwarding forwarding_;
};

// The values of a trial's placeholders: its hyperparameters (the space's default for one it
// lacks), {epochs} (tuner/epochs, else `default_epochs`), {initial_epoch}, {trial_id},
// {trial_dir} and {parent_trial_dir} (the folder of tuner/trial_id, the trial a Hyperband or
// ASHA trial was promoted from; empty for a trial without one).
std::map<std::string, std::string> trial_placeholder_values(const tune::Oracle& oracle,
                                                            const tune::Trial& trial,
                                                            int default_epochs);

// Runs the trial's program and ends the trial in the oracle (completed, or failed with why);
// returns the ended trial. The trial's environment holds OSPREY_TRIAL_ID, OSPREY_TRIAL_DIR,
// OSPREY_PARENT_TRIAL_DIR, OSPREY_METRIC_FILE and hypertune's names for them. tune::TrialLost
// (the chief gave the trial to another worker) and other errors stop the program and propagate.
tune::Trial run_command_trial(tune::Oracle& oracle, const tune::Trial& trial,
                              const CommandStudyOptions& options);

}  // namespace osprey::cli
