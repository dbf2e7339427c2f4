// Profiler (torch.profiler's schedule, Keras TensorBoard's profile_batch): records a window of
// training steps with core/trace.h (every op's forward and backward, layer calls, optimizer
// updates, waits for data, collectives, memory counters) and, when the window's last step ends,
// writes LOG_DIR/trace.json (open it in ui.perfetto.dev or chrome://tracing) and
// LOG_DIR/summary.txt (the ops with the most self time). Steps count from 0 across epochs; the
// window [first, last] includes both, and the wait for step `first`'s batch. In a multi-worker
// job every worker also writes LOG_DIR/trace.rank<r>.json and the chief merges them into
// trace.json on its clock, using offsets measured when the window opens.
//   model.fit(x, y, {.epochs = 3,
//                    .callbacks = {os::callbacks::Profiler("logs", {.steps = {20, 30}})}});
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "osprey/train/callback.h"
#include "osprey/train/strategy.h"

namespace osprey::train {

struct ProfileSteps {
  int64_t first = 2;  // the first steps create primitives and fill caches: not typical
  int64_t last = 4;
};

// "20-30" or "25" (one step). ValueError naming `what` (the flag or option) otherwise, or when
// first > last or a step is negative.
ProfileSteps parse_profile_steps(std::string_view text, std::string_view what);

struct ProfilerOptions {
  ProfileSteps steps{};
  int summary_rows = 40;  // rows of summary.txt's tables
  bool verbose = false;   // the chief prints where it wrote the files (osprey train --profile)
};

class Profiler : public Callback {
 public:
  explicit Profiler(std::filesystem::path log_dir, ProfilerOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  std::shared_ptr<Callback> clone() const override {
    return std::make_shared<Profiler>(log_dir_, options_);
  }
  const std::filesystem::path& log_dir() const { return log_dir_; }
  const ProfilerOptions& options() const { return options_; }

 private:
  void open_window();
  void close_window();

  std::filesystem::path log_dir_;
  ProfilerOptions options_;
  int64_t step_ = 0;  // steps finished since on_train_begin
  bool recording_ = false;
  Strategy::TraceClockOffset clock_;
};

}  // namespace osprey::train

namespace osprey::callbacks {
inline std::shared_ptr<train::Profiler> Profiler(std::filesystem::path log_dir,
                                                 train::ProfilerOptions options = {}) {
  return std::make_shared<train::Profiler>(std::move(log_dir), options);
}
}  // namespace osprey::callbacks
