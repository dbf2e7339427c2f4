// What `osprey run` keeps in its output folder so that, interrupted, it resumes where it was:
// run.json holds the options the run started with, the seconds already spent (the budget counts
// every session of the run) and each finished stage's row of the report. It is rewritten
// atomically after every epoch and every stage, so a kill loses at most the epoch under way.
//   RunState state = RunState::open(dir / "run.json", options);   // resumes or starts
//   RunClock clock(state.elapsed());                                // counts on from there
//   if (!state.done("tune")) { ...; state.finish("tune", row, clock.now()); }
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace osprey::cli {

// Seconds spent by this run, earlier sessions included.
class RunClock {
 public:
  explicit RunClock(double before = 0) : before_(before), start_(Clock::now()) {}
  double now() const {
    return before_ + std::chrono::duration<double>(Clock::now() - start_).count();
  }

 private:
  using Clock = std::chrono::steady_clock;
  double before_;
  Clock::time_point start_;
};

// One row of the report: what a stage produced, measured on the test split.
struct StageRow {
  std::string stage;
  std::string what;  // "best tuned model", "ensemble of 3", ...
  double test_accuracy = 0;
  double samples_per_second = 0;  // inference, batch 256, on the test split
  int64_t size_bytes = 0;         // the saved weights
  double seconds = 0;             // the stage's own time

  nlohmann::json to_json() const;
  static StageRow from_json(const nlohmann::json& j);
};

class RunState {
 public:
  // Reads `file` when it exists and was written for the same options (else UsageError naming
  // the option that differs and --overwrite); starts afresh otherwise.
  static RunState open(const std::filesystem::path& file, const nlohmann::json& options);

  bool resumed() const { return resumed_; }
  double elapsed() const { return state_.value("elapsed_seconds", 0.0); }
  bool done(const std::string& stage) const;
  std::optional<StageRow> row(const std::string& stage) const;
  // A stage's extra facts (which trials it kept, epochs planned, ...).
  nlohmann::json& notes(const std::string& stage);

  // Records the time spent so far (after every epoch) and writes the file.
  void save_elapsed(double elapsed);
  void finish(const std::string& stage, const StageRow& row, double elapsed);

 private:
  RunState(std::filesystem::path file, nlohmann::json state, bool resumed)
      : file_(std::move(file)), state_(std::move(state)), resumed_(resumed) {}
  void write() const;

  std::filesystem::path file_;
  nlohmann::json state_;
  bool resumed_ = false;
};

}  // namespace osprey::cli
