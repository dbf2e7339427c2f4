// The metric report format of `osprey tune --command`, both sides of it in one place: how a C++
// program reports its metrics (report_metric, the one-line equivalent of cloudml-hypertune's
// report_hyperparameter_tuning_metric) and how osprey reads a report back (parse_metric_line,
// parse_metric_json; cli/command_trial.cpp reads each trial's stdout and metric file with them):
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     ...
//     tune::report_metric("val_loss", val_loss, epoch);
//   }
// Under osprey tune (OSPREY_METRIC_FILE set) the report is appended to that file as a JSON line,
// {"val_loss": 0.41, "epoch": 2}; otherwise it is printed on stdout as
// `osprey-metric val_loss=0.41 epoch=2`. Never both: osprey reads both channels, and a report
// without an epoch would count twice. The file wins because it still arrives when the program's
// stdout goes elsewhere (a log file, another program).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "osprey/tune/trial.h"

namespace osprey::tune {

// One metric of one epoch (0-based; nullopt: the epoch after the previous report's). ValueError
// naming the metric for an empty name, one with whitespace or '=', one osprey reads itself
// (epoch, global_step, timestamp, trial, checkpoint_path), or a negative epoch; IoError naming
// the file when OSPREY_METRIC_FILE cannot be appended to. Values print with 17 significant digits,
// so the oracle sees exactly the double reported (NaN and infinities included).
void report_metric(const std::string& name, double value, std::optional<int> epoch = std::nullopt);
// Several metrics of one epoch in one report.
void report_metrics(const MetricValues& metrics, std::optional<int> epoch = std::nullopt);

// Keys of a report that are not metrics: osprey's epoch and hypertune's bookkeeping. A program
// may not report a metric by these names; a metric file line's values under them are not metrics.
inline constexpr const char* kReportKeys[] = {"epoch", "global_step", "timestamp", "trial",
                                              "checkpoint_path"};

// One metric report as read back: its values (a stdout line's in the order given, a JSON line's
// in key order) and the epoch it names (0-based, as Keras counts; nullopt: the epoch after the
// previous report's, the first at the trial's {initial_epoch}). A report naming the same epoch as
// the one before adds its values to that epoch's.
struct MetricReport {
  MetricValues metrics;
  std::optional<int> epoch;
};
// A stdout line `osprey-metric NAME=VALUE [NAME=VALUE ...] [epoch=E]`: nullopt when the line is
// not a report (it does not start with the word osprey-metric); ValueError quoting the line for a
// report that is malformed (no NAME=VALUE, a value that is not a number, a bad epoch, a name
// given twice). Values parse as strtod does, nan and inf included.
std::optional<MetricReport> parse_metric_line(std::string_view line);
// A JSON line of the metric file: an object of metric values (numbers, numeric strings as
// hypertune writes them, null for NaN, Python's NaN and Infinity) with an optional "epoch" or
// hypertune's "global_step"; hypertune's "timestamp", "trial" and "checkpoint_path" are ignored.
// ValueError quoting the line for anything else.
MetricReport parse_metric_json(std::string_view line);

}  // namespace osprey::tune
