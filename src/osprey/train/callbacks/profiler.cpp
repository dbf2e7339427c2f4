#include "osprey/train/callbacks/profiler.h"

#include <fmt/format.h>

#include <charconv>
#include <string>

#include "osprey/core/error.h"
#include "osprey/core/trace.h"
#include "osprey/io/atomic_file.h"
#include "osprey/io/chrome_trace.h"
#include "osprey/io/json.h"
#include "osprey/io/trace_summary.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::train {

namespace {

bool parse_step(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0;
}

void check_steps(const ProfileSteps& s, std::string_view what) {
  OSPREY_CHECK(s.first >= 0 && s.first <= s.last,
               "{}: the steps must satisfy 0 <= first <= last. Received: first={}, last={}", what,
               s.first, s.last);
}

}  // namespace

ProfileSteps parse_profile_steps(std::string_view text, std::string_view what) {
  ProfileSteps s;
  const size_t dash = text.find('-');
  const bool ok =
      dash == std::string_view::npos
          ? parse_step(text, s.first) && parse_step(text, s.last)
          : parse_step(text.substr(0, dash), s.first) && parse_step(text.substr(dash + 1), s.last);
  OSPREY_CHECK(ok, "{}: expected a step range FIRST-LAST or one step (e.g. 20-30). Received: '{}'",
               what, text);
  check_steps(s, what);
  return s;
}

Profiler::Profiler(std::filesystem::path log_dir, ProfilerOptions options)
    : log_dir_(std::move(log_dir)), options_(options) {
  check_steps(options_.steps, "Profiler");
  OSPREY_CHECK(options_.summary_rows >= 1, "Profiler: summary_rows must be positive. Received: {}",
               options_.summary_rows);
}

void Profiler::on_train_begin(const Logs& /*logs*/) {
  step_ = 0;
  if (options_.steps.first == 0) open_window();
}

void Profiler::on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {
  ++step_;
  // Steps as callbacks see them: with steps_per_execution k, one per group of k.
  if (recording_ && step_ > options_.steps.last) close_window();
  // Opened as the step before the window ends, so the window sees its first batch's wait.
  if (!recording_ && step_ == options_.steps.first) open_window();
}

void Profiler::on_train_end(const Logs& /*logs*/) {
  if (recording_) close_window();  // fit ended inside the window: write what there is
  // A window that never opened writes nothing; say so rather than leave the folder empty.
  if (step_ < options_.steps.first && model().trainer().strategy().is_chief()) {
    fmt::print(stderr,
               "osprey: warning: the profiler recorded nothing: training ended after {} steps, "
               "before step {} (steps count from 0 across epochs)\n",
               step_, options_.steps.first);
  }
}

void Profiler::open_window() {
  // The clock exchange is a collective: every worker reaches this callback at the same step.
  clock_ = model().trainer().strategy().trace_clock_offset();
  trace::set_thread_name("main");
  trace::start();
  recording_ = true;
}

void Profiler::close_window() {
  const trace::Session session = trace::stop();
  recording_ = false;
  const Strategy& strategy = model().trainer().strategy();
  const int rank = strategy.worker_rank();
  const nlohmann::json mine =
      io::chrome_trace(session, {.pid = rank,
                                 .process_name = "rank " + std::to_string(rank),
                                 .clock_offset_us = clock_.offset_us,
                                 .clock_uncertainty_us = clock_.uncertainty_us});
  std::filesystem::create_directories(log_dir_);
  if (strategy.num_workers() > 1) {
    io::write_chrome_trace(log_dir_ / ("trace.rank" + std::to_string(rank) + ".json"), mine);
  }
  const std::vector<std::string> texts = strategy.gather_on_chief(mine.dump());
  if (!strategy.is_chief()) return;
  std::vector<nlohmann::json> traces;
  traces.reserve(texts.size());
  for (size_t r = 0; r < texts.size(); ++r) {
    traces.push_back(io::parse_json(texts[r], "the trace of rank " + std::to_string(r)));
  }
  io::write_chrome_trace(log_dir_ / "trace.json", io::merge_chrome_traces(traces));
  const io::TableOptions table{.top = options_.summary_rows};
  std::string summary =
      fmt::format("osprey profile: steps {}-{}, rank {}, {} threads\n\n", options_.steps.first,
                  options_.steps.last, rank, session.threads.size());
  summary += "By name (self time = time minus child spans on the same thread)\n";
  summary += io::format_summary_table(io::summarize_trace(session), table);
  summary += "\nOps by layer\n";
  summary += io::format_summary_table(io::summarize_trace(session, {.by_layer = true}), table);
  io::atomic_write_file(log_dir_ / "summary.txt", summary);
  if (options_.verbose) {
    fmt::print("profile: steps {}-{} written to {} (open it in ui.perfetto.dev) and {}\n",
               options_.steps.first, options_.steps.last, (log_dir_ / "trace.json").string(),
               (log_dir_ / "summary.txt").string());
  }
}

}  // namespace osprey::train
