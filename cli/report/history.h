// Training curves on disk, for `osprey report`: history.json, the per-epoch logs of one fit that
// osprey run writes beside each retrained network (HistoryRecorder), and CSVLogger's files
// (osprey train --csv-log); both read back as Curves. history.json holds the same records as a
// tuner trial's executions, so one reader serves both:
//   {"format": "osprey-history", "version": 1,
//    "epochs": [{"epoch": 0, "metrics": {"loss": 0.61, "accuracy": 0.78}}, ...]}
// A value that is not finite is stored as the string "nan", "inf" or "-inf" (JSON has no NaN).
//   auto rec = std::make_shared<report::HistoryRecorder>();
//   model.fit(x, y, {.callbacks = {rec}});
//   model.save(dir, {.json_files = {{"history.json", rec->to_json()}}});  // inside the atomic save
#pragma once

#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "osprey/io/json.h"
#include "osprey/train/callback.h"

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

// Collects every epoch's logs; to_json() is history.json's content, which a model save should
// carry in its folder (SaveExtras::json_files) so that the folder and its curves are replaced
// together; write() saves it alone (atomically).
class HistoryRecorder : public train::Callback {
 public:
  void on_epoch_end(int epoch, const train::Logs& logs) override;
  nlohmann::json to_json() const;
  void write(const std::filesystem::path& file) const;
  const nlohmann::json& epochs() const { return epochs_; }

 private:
  nlohmann::json epochs_ = nlohmann::json::array();
};

// A metric value as history.json and trial.json store it (a number, or "nan" / "inf" / "-inf").
nlohmann::json metric_to_json(double v);
// Reads it back (null too, which is how nlohmann writes a NaN); anything else is an IoError
// naming the file and the field.
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
