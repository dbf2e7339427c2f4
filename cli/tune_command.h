// `osprey tune --command`: tunes any program's metric, as Vertex AI's custom hyperparameter tuning
// job does. Each trial (command_trial.h) runs `/bin/sh -c COMMAND` with the trial's values
// substituted for {placeholders}; the program reports metrics on stdout
// (`osprey-metric loss=0.41 epoch=2`) or as JSON lines in $OSPREY_METRIC_FILE
// (= $CLOUD_ML_HP_METRIC_FILE, so a program that uses Google's cloudml-hypertune works unchanged;
// the format: tune/report_metric.h), and each report goes to the oracle, whose pruner may cut the
// trial short. A trial that Hyperband or ASHA promoted from a shorter one (tuner/trial_id) gets
// the parent's folder as {parent_trial_dir} and $OSPREY_PARENT_TRIAL_DIR (empty for a trial
// without a parent), so the program can resume from what the parent saved in its {trial_dir}
// and train only from {initial_epoch} to {epochs}. The study loop uses only the Oracle's virtual
// calls, so it runs the same against a local oracle or one that forwards to a remote chief
// (`osprey launch --tuners N`). The placeholder functions are declared here to be tested alone.
//   CommandStudyOptions o{.command = "python3 train.py --lr {lr} --epochs {epochs}", .epochs = 5};
//   return run_command_study(oracle, o);
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/tune/oracle.h"

namespace osprey::cli {

// Placeholders osprey fills in besides the hyperparameters; a space may not declare these names.
inline constexpr const char* kCommandPlaceholders[] = {"epochs", "initial_epoch", "trial_id",
                                                       "trial_dir", "parent_trial_dir"};

// The placeholder names of a command template, in order of appearance (repeats kept). `{{` and
// `}}` are literal braces. ValueError for an unmatched brace or an empty `{}`, naming the
// position.
std::vector<std::string> command_placeholders(std::string_view command);
// The command with each {name} replaced by io::shell_quote(values[name]) and `{{`/`}}` by braces.
// ValueError naming a placeholder `values` lacks and listing the ones it has.
std::string substitute_command(std::string_view command,
                               const std::map<std::string, std::string>& values);

// UsageError before any trial runs: a template that does not parse, a placeholder that is neither
// a hyperparameter of `space` nor one of kCommandPlaceholders (the message lists the valid ones),
// or a space that declares one of kCommandPlaceholders.
void check_command_template(std::string_view command, const tune::HyperParameters& space);

struct CommandStudyOptions {
  std::string command;       // the template, run as /bin/sh -c
  int epochs = 1;            // {epochs} of a trial that carries no tuner/epochs
  double trial_timeout = 0;  // seconds; 0: none
  int max_consecutive_failed_trials = 3;
  bool verbose = true;  // echo the trials' output, prefixed "[trial ID] "
  std::string tuner_id = "tuner0";
};

// Runs trials until the oracle stops the search, printing a row per trial and a summary of the
// best; first check_command_template against the oracle's space. Returns 0 when
// the study has a completed trial; Error (exit 1) when none completed, or when
// max_consecutive_failed_trials trials failed in a row. SIGINT and SIGTERM stop the running
// trial's process group and then osprey; the trial stays running in the oracle, so a rerun
// resumes it.
int run_command_study(tune::Oracle& oracle, const CommandStudyOptions& options);

}  // namespace osprey::cli
