// Training curves on disk, for `osprey report`: history.json, the per-epoch logs of one fit that
// osprey train and osprey run write beside each network (train::HistoryRecorder, in the library:
// osprey/train/callbacks/history_recorder.h), and CSVLogger's files (osprey train --csv-log);
// both read back as Curves. history.json holds the same records as a tuner trial's executions,
// so one reader serves both.
#pragma once

#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "osprey/io/json.h"
#include "osprey/train/callbacks/history_recorder.h"

namespace osprey::cli::report {

// A value a plot or a table does not have (an epoch without that metric, a trial without it).
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One run of training, epoch by epoch: what a line plot of loss and accuracy needs.
struct Curves {
  std::string title{};                                   // "retrain/member_0", "trial 0004"
  std::string source{};                                  // the file it came from
  std::vector<double> epochs{};                          // 1-based, as progress bars count
  std::map<std::string, std::vector<double>> metrics{};  // one value per epoch, NaN where absent

  bool empty() const { return epochs.empty(); }
  // Appends an epoch's metrics; metrics new to it are NaN on the earlier epochs.
  void add_epoch(double epoch, const std::vector<std::pair<std::string, double>>& values);
};

using train::HistoryRecorder;
using train::metric_to_json;

// A metric value as metric_to_json stores it, read back (null too, which is how nlohmann writes a
// NaN); anything else is an IoError naming the file and the field.
double metric_from_json(const io::JsonView& v);

// The records [{"epoch": e, "metrics": {...}}, ...] of history.json or of one execution in a
// trial.json, as Curves; errors name the file and the field.
Curves curves_from_records(const io::JsonView& records);
// history.json (IoError naming the file when it is not one).
Curves read_history(const std::filesystem::path& file);
// A CSVLogger file, whose header starts with "epoch"; nullopt for a CSV of some other kind. A
// cell that is not a number is NaN; a row with more cells than the header is an IoError.
std::optional<Curves> read_csv_log(const std::filesystem::path& file);

}  // namespace osprey::cli::report
