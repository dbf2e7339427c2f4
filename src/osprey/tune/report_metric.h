// The metric report format of `osprey tune --command`, both sides of it in one place: how a C++
// program reports its metrics (report_metric, the one-line equivalent of cloudml-hypertune's
// report_hyperparameter_tuning_metric) and how osprey reads a report back (parse_metric_line,
// parse_metric_json; cli/command_trial.cpp reads each trial's stdout and metric file with them):
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     ...
//     tune::report_metric("val_loss", val_loss, epoch);
//   }
// Under osprey tune (OSPREY_METRIC_FILE set) the report is appended to that file as a JSON line,
// {"val_loss": 0.41, "epoch": 3}; otherwise it is printed on stdout as
// `osprey-metric val_loss=0.41 epoch=3`. Never both: osprey reads both channels, and a report
// without an epoch would count twice. The file wins because it still arrives when the program's
// stdout goes elsewhere (a log file, another program).
// Epochs: a report's `epoch=E` (and a JSON line's "epoch") counts from 1, as a program printing
// "Epoch 3/3" counts: the last epoch of a trial of {epochs} epochs is epoch={epochs}, the first
// of a trial resumed at {initial_epoch} is epoch={initial_epoch}+1. osprey stores epochs 0-based,
// as Keras's on_epoch_end(epoch) and osprey's own trials count them, so the conversion happens
// here and nowhere else: report_metric takes the 0-based loop index and writes index + 1;
// parse_metric_* read E and give E - 1 (MetricReport::epoch). Summaries print the stored epoch
// + 1, so a program's "epoch=2" is the summary's "best epoch 2". hypertune's "global_step" is not
// osprey's: it is read as it is written, the 0-based epoch a Keras callback passes it
// (`global_step=epoch` in on_epoch_end).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "osprey/tune/trial.h"

namespace osprey::tune {

// One metric of one epoch (0-based, written + 1; nullopt: the epoch after the previous report's).
// ValueError naming the metric for an empty name, one with whitespace or '=', one osprey reads
// itself (epoch, global_step, timestamp, trial, checkpoint_path), or a negative epoch; IoError
// naming the file when OSPREY_METRIC_FILE cannot be appended to. Values print with 17
// significant digits, so the oracle sees exactly the double reported (NaN and infinities too).
void report_metric(const std::string& name, double value, std::optional<int> epoch = std::nullopt);
// Several metrics of one epoch in one report.
void report_metrics(const MetricValues& metrics, std::optional<int> epoch = std::nullopt);

// The boundary between the two counts: the epoch a report names (1-based) for osprey's 0-based
// epoch, and back. reported_epoch(0) == 1; stored_epoch(1) == 0.
inline int reported_epoch(int stored) { return stored + 1; }
inline int stored_epoch(int reported) { return reported - 1; }

// Keys of a report that are not metrics: osprey's epoch and hypertune's bookkeeping. A program
// may not report a metric by these names; a metric file line's values under them are not metrics.
inline constexpr const char* kReportKeys[] = {"epoch", "global_step", "timestamp", "trial",
                                              "checkpoint_path"};

// One metric report as read back: its values (a stdout line's in the order given, a JSON line's
// in key order) and the epoch it names, 0-based as osprey stores it (epoch=3 reads as 2; nullopt:
// the epoch after the previous report's, the first at the trial's {initial_epoch}). A report
// naming the same epoch as the one before adds its values to that epoch's.
struct MetricReport {
  MetricValues metrics;
  std::optional<int> epoch;
};
// A stdout line `osprey-metric NAME=VALUE [NAME=VALUE ...] [epoch=E]`: nullopt when the line is
// not a report (it does not start with the word osprey-metric); ValueError quoting the line for a
// report that is malformed (no NAME=VALUE, a value that is not a number, an epoch that is not an
// integer >= 1, a name given twice). Values parse as strtod does, nan and inf included.
std::optional<MetricReport> parse_metric_line(std::string_view line);
// A JSON line of the metric file: an object of metric values (numbers, numeric strings as
// hypertune writes them, null for NaN, Python's NaN and Infinity) with an optional "epoch"
// (1-based, as the stdout line's) or hypertune's "global_step" (0-based, read as it is);
// hypertune's "timestamp", "trial" and "checkpoint_path" are ignored.
// ValueError quoting the line for anything else.
MetricReport parse_metric_json(std::string_view line);

}  // namespace osprey::tune
