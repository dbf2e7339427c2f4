// `osprey tune --command`: tunes any program's metric, as Vertex AI's custom hyperparameter tuning
// job does. Each trial runs `/bin/sh -c COMMAND` with the trial's values substituted for
// {placeholders}; the program reports metrics on stdout (`osprey-metric loss=0.41 epoch=2`) or as
// JSON lines in $OSPREY_METRIC_FILE (= $CLOUD_ML_HP_METRIC_FILE, so a program that uses Google's
// cloudml-hypertune works unchanged), and each report goes to the oracle, whose pruner may cut
// the trial short. The trial loop uses only the Oracle's virtual calls, so it runs the same
// against a local oracle or one that forwards to a remote chief. The pure parts (placeholders,
// report parsers) are declared here to be tested on their own.
//   CommandStudyOptions o{.command = "python3 train.py --lr {lr} --epochs {epochs}", .epochs = 5};
//   return run_command_study(oracle, o);
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/tune/oracle.h"

namespace osprey::cli {

// Placeholders osprey fills in besides the hyperparameters; a space may not declare these names.
inline constexpr const char* kCommandPlaceholders[] = {"epochs", "initial_epoch", "trial_id",
                                                       "trial_dir"};

// The placeholder names of a command template, in order of appearance (repeats kept). `{{` and
// `}}` are literal braces. ValueError for an unmatched brace or an empty `{}`, naming the
// position.
std::vector<std::string> command_placeholders(std::string_view command);
// The command with each {name} replaced by shell_quote(values[name]) and `{{`/`}}` by braces.
// ValueError naming a placeholder `values` lacks and listing the ones it has.
std::string substitute_command(std::string_view command,
                               const std::map<std::string, std::string>& values);
// `s` in single quotes for /bin/sh, embedded single quotes as '\''.
std::string shell_quote(std::string_view s);

// One metric report: values in the order given and the epoch it names (0-based, as Keras counts;
// nullopt: the epoch after the previous report's, the first at the trial's {initial_epoch}). A
// report naming the same epoch as the one before adds its values to that epoch's.
struct MetricReport {
  tune::MetricValues metrics;
  std::optional<int> epoch;
};
// A stdout line `osprey-metric NAME=VALUE [NAME=VALUE ...] [epoch=E]`: nullopt when the line is
// not a report (it does not start with the word osprey-metric); ValueError quoting the line for a
// report that is malformed (no NAME=VALUE, a value that is not a number, a bad epoch, a name
// given twice). Values parse as strtod does, nan and inf included.
std::optional<MetricReport> parse_metric_line(std::string_view line);
// A JSON line of the metric file: an object of metric values (numbers, numeric strings as
// hypertune writes them, null for NaN) with an optional "epoch" or hypertune's "global_step";
// hypertune's "timestamp", "trial" and "checkpoint_path" are ignored. ValueError quoting the line
// for anything else.
MetricReport parse_metric_json(std::string_view line);

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
