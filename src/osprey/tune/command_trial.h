// Command trials: a Study's runner (study.h) for any program's metric, as Vertex AI's custom
// hyperparameter tuning jobs run them (`osprey tune --command`). Each trial runs `/bin/sh -c
// COMMAND` in a process group of its own, with the trial's values substituted for {placeholders}
// (io::shell_quote'd); the program reports metrics on stdout (`osprey-metric loss=0.41 epoch=2`)
// or as JSON lines in $OSPREY_METRIC_FILE (= $CLOUD_ML_HP_METRIC_FILE, so a program that uses
// Google's cloudml-hypertune works unchanged; the format: report_metric.h, whose epoch=E counts
// from 1 and is stored 0-based, as in-process trials store it, so the summary's "best epoch E",
// the median pruner's warm-up and ASHA's and Hyperband's rungs count as the program does). Each
// report goes to the oracle, whose pruner may stop the trial; the trial also ends when the
// program exits, times out or reports something unreadable. A trial that Hyperband or ASHA promoted
// from a shorter one (tuner/trial_id) gets the parent's folder as {parent_trial_dir} and
// $OSPREY_PARENT_TRIAL_DIR (empty without a parent), so the program can resume from what the parent
// saved in its {trial_dir} and train only from {initial_epoch} to {epochs} (0-based
// {initial_epoch}, Keras's fit(initial_epoch=...): its first report is epoch={initial_epoch}+1).
//   CommandTrialRunner runner(study.oracle(), {.command = "python3 train.py --lr {lr}"});
//   study.run(runner);
// The template functions are declared here to be tested alone.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/tune/oracle.h"
#include "osprey/tune/study.h"

namespace osprey::tune {

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
// ValueError before any trial runs: a template that does not parse, a placeholder that is neither
// a hyperparameter of `space` nor one of kCommandPlaceholders (the message lists the valid ones),
// or a space that declares one of kCommandPlaceholders.
void check_command_template(std::string_view command, const HyperParameters& space);

// The values of a trial's placeholders: its hyperparameters (the space's default for one it
// lacks), {epochs} (tuner/epochs, else `default_epochs`), {initial_epoch}, {trial_id},
// {trial_dir} and {parent_trial_dir} (the folder of tuner/trial_id, the trial a Hyperband or
// ASHA trial was promoted from; empty for a trial without one).
std::map<std::string, std::string> trial_placeholder_values(const Oracle& oracle,
                                                            const Trial& trial, int default_epochs);

struct CommandTrialOptions {
  std::string command{};     // the template, run as /bin/sh -c
  int epochs = 1;            // {epochs} of a trial that carries no tuner/epochs
  double trial_timeout = 0;  // seconds; 0: none
  bool verbose = true;       // echo the trials' output, prefixed "[trial ID] "
};

// Runs the trial's program and ends the trial in the oracle (completed, or failed with why). The
// program's environment holds OSPREY_TRIAL_ID, OSPREY_TRIAL_DIR, OSPREY_PARENT_TRIAL_DIR,
// OSPREY_METRIC_FILE and hypertune's names for them. Its process receives forwarded signals: with
// an io::SignalForwarding of Target::group active, Ctrl-C stops the program's whole group. The
// trial stays running in the oracle when anything throws (TrialLost included), so a rerun
// resumes it.
class CommandTrialRunner : public TrialRunner {
 public:
  CommandTrialRunner(Oracle& oracle, CommandTrialOptions options);
  Trial run(const Trial& trial) override;

 private:
  Oracle& oracle_;
  CommandTrialOptions options_;
};

}  // namespace osprey::tune
