#include "cli/run_state.h"

#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/io/json.h"

namespace osprey::cli {

namespace {
constexpr int kVersion = 1;
}

nlohmann::json StageRow::to_json() const {
  return {{"stage", stage},
          {"what", what},
          {"test_accuracy", test_accuracy},
          {"samples_per_second", samples_per_second},
          {"size_bytes", size_bytes},
          {"seconds", seconds}};
}

StageRow StageRow::from_json(const nlohmann::json& j) {
  return {.stage = j.at("stage").get<std::string>(),
          .what = j.at("what").get<std::string>(),
          .test_accuracy = j.at("test_accuracy").get<double>(),
          .samples_per_second = j.at("samples_per_second").get<double>(),
          .size_bytes = j.at("size_bytes").get<int64_t>(),
          .seconds = j.at("seconds").get<double>()};
}

RunState RunState::open(const std::filesystem::path& file, const nlohmann::json& options) {
  if (!std::filesystem::exists(file)) {
    RunState s(file, {{"version", kVersion}, {"options", options}, {"elapsed_seconds", 0.0}},
               false);
    s.write();
    return s;
  }
  nlohmann::json state = io::read_json_file(file);
  OSPREY_CHECK_T(IoError, state.value("version", 0) == kVersion && state.contains("options"),
                 "{}: not a run state this osprey writes (version {} expected)", file.string(),
                 kVersion);
  for (const auto& [key, value] : options.items()) {
    const nlohmann::json& before = state["options"].value(key, nlohmann::json());
    OSPREY_CHECK_T(cli::UsageError, before == value,
                   "osprey run: {} holds a run started with {}={}, not {}: pass --overwrite to "
                   "start over or choose another --output",
                   file.parent_path().string(), key, before.dump(), value.dump());
  }
  return RunState(file, std::move(state), true);
}

bool RunState::done(const std::string& stage) const {
  return state_.contains("stages") && state_["stages"].contains(stage) &&
         state_["stages"][stage].contains("row");
}

std::optional<StageRow> RunState::row(const std::string& stage) const {
  if (!done(stage)) return std::nullopt;
  return StageRow::from_json(state_["stages"][stage]["row"]);
}

nlohmann::json& RunState::notes(const std::string& stage) {
  return state_["stages"][stage]["notes"];
}

void RunState::save_elapsed(double elapsed) {
  state_["elapsed_seconds"] = elapsed;
  write();
}

void RunState::finish(const std::string& stage, const StageRow& row, double elapsed) {
  state_["stages"][stage]["row"] = row.to_json();
  save_elapsed(elapsed);
}

void RunState::write() const { io::write_json_file(file_, state_); }

}  // namespace osprey::cli
