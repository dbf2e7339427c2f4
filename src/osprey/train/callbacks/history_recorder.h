// HistoryRecorder: the callback that keeps every epoch's logs as history.json, the per-epoch
// curves `osprey report` draws (and osprey train / osprey run write beside each model):
//   {"format": "osprey-history", "version": 1,
//    "epochs": [{"epoch": 0, "metrics": {"loss": 0.61, "accuracy": 0.78}}, ...]}
// Epochs count from 0, as on_epoch_end's; a value that is not finite is stored as the string
// "nan", "inf" or "-inf" (JSON has no NaN). The reader is `osprey report`'s (cli/report/history.h).
//   auto rec = os::callbacks::HistoryRecorder();
//   model.fit(x, y, {.callbacks = {rec}});
//   model.save(dir, {.json_files = {{"history.json", rec->to_json()}}});  // inside the atomic save
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "osprey/train/callback.h"

namespace osprey::train {

// history.json's "format" and "version", which its reader checks.
inline constexpr const char* kHistoryFormat = "osprey-history";
inline constexpr int kHistoryVersion = 1;

// Collects every epoch's logs; to_json() is history.json's content, which a model save should
// carry in its folder (SaveExtras::json_files) so that the folder and its curves are replaced
// together; write() saves it alone (atomically).
class HistoryRecorder : public Callback {
 public:
  void on_epoch_end(int epoch, const Logs& logs) override;
  nlohmann::json to_json() const;
  void write(const std::filesystem::path& file) const;
  const nlohmann::json& epochs() const { return epochs_; }

 private:
  nlohmann::json epochs_ = nlohmann::json::array();
};

// A metric value as history.json and trial.json store it (a number, or "nan" / "inf" / "-inf").
nlohmann::json metric_to_json(double v);

}  // namespace osprey::train

namespace osprey::callbacks {

inline std::shared_ptr<train::HistoryRecorder> HistoryRecorder() {
  return std::make_shared<train::HistoryRecorder>();
}

}  // namespace osprey::callbacks
