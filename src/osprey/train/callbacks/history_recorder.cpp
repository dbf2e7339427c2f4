#include "osprey/train/callbacks/history_recorder.h"

#include <fmt/format.h>

#include <cmath>

#include "osprey/io/json.h"

namespace osprey::train {

void HistoryRecorder::on_epoch_end(int epoch, const Logs& logs) {
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [k, v] : logs.items()) m[k] = metric_to_json(v);
  epochs_.push_back({{"epoch", epoch}, {"metrics", m}});
}

nlohmann::json HistoryRecorder::to_json() const {
  return nlohmann::json{
      {"format", kHistoryFormat}, {"version", kHistoryVersion}, {"epochs", epochs_}};
}

void HistoryRecorder::write(const std::filesystem::path& file) const {
  io::write_json_file(file, to_json());
}

nlohmann::json metric_to_json(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(fmt::format("{}", v));
}

}  // namespace osprey::train
