// report_metric: how a C++ program run by `osprey tune --command` reports its metrics, the
// one-line equivalent of cloudml-hypertune's report_hyperparameter_tuning_metric:
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

}  // namespace osprey::tune
