// `osprey tune --command`: tunes any program's metric (tune/command_trial.h runs each trial) and
// prints a row per trial and a summary of the best. The loop is the Study's (tune/study.h), so it
// runs the same against a local oracle or one that forwards to a remote chief (`osprey launch
// --tuners N`).
//   tune::Study study(std::move(oracle), {.directory = "studies/lr"});
//   return run_command_study(study, {.command = "python3 train.py --lr {lr}", .epochs = 5});
#pragma once

#include <string_view>

#include "osprey/tune/command_trial.h"
#include "osprey/tune/study.h"

namespace osprey::cli {

// tune::check_command_template, its errors as UsageError (exit 2) before any trial runs.
void check_command_template(std::string_view command, const tune::HyperParameters& space);

// Runs trials until the study ends, printing a row per trial and a summary of the best; first
// check_command_template against the oracle's space. Returns 0 when the study has a completed
// trial; Error (exit 1) when none completed, or when the study's limit of failures in a row was
// reached; ExitCode{kExitNextTrial} when a launched worker ran its share of trials. SIGINT and
// SIGTERM stop the running trial's process group and then osprey; the trial stays running in the
// oracle, so a rerun resumes it.
int run_command_study(tune::Study& study, const tune::CommandTrialOptions& options);

}  // namespace osprey::cli
