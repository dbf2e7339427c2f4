// Writes profiler sessions (core/trace.h) as Chrome trace event JSON, the format Perfetto
// (ui.perfetto.dev) and chrome://tracing open: spans as complete events (ph "X"), counters as
// ph "C", process and thread names as metadata (ph "M"), pid = the worker's rank. Several
// workers' traces merge into one file on one clock: each carries its offset to rank 0's clock
// and how well that offset is known, recorded under "otherData".
//   nlohmann::json t = io::chrome_trace(session, {.pid = rank, .clock_offset_us = offset});
//   io::write_chrome_trace("logs/trace.json", io::merge_chrome_traces({t0, t1}));
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "osprey/core/trace.h"

namespace osprey::io {

struct ChromeTraceOptions {
  int pid = 0;                      // the worker's rank
  std::string process_name{};       // "" gives "rank <pid>"
  int64_t clock_offset_us = 0;      // added to every timestamp: this clock -> rank 0's
  double clock_uncertainty_us = 0;  // half the round trip of the best clock exchange
};

// One worker's trace document: {"traceEvents": [...], "displayTimeUnit": "ms",
// "otherData": {"clock_sync": [{"pid", "offset_us", "uncertainty_us"}]}}.
nlohmann::json chrome_trace(const trace::Session& session, const ChromeTraceOptions& options);
// One document holding every event of `traces` (already on one clock) and all their
// clock_sync entries, in the order given.
nlohmann::json merge_chrome_traces(const std::vector<nlohmann::json>& traces);
// Atomic write (io/atomic_file.h), compact JSON.
void write_chrome_trace(const std::filesystem::path& path, const nlohmann::json& trace);

}  // namespace osprey::io
