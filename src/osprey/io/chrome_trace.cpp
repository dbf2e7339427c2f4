#include "osprey/io/chrome_trace.h"

#include "osprey/core/error.h"
#include "osprey/io/atomic_file.h"

namespace osprey::io {

namespace {

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json args_json(const trace::Args& args) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : args) j[key] = value;
  return j;
}

}  // namespace

nlohmann::json chrome_trace(const trace::Session& session, const ChromeTraceOptions& options) {
  const int pid = options.pid;
  nlohmann::json events = nlohmann::json::array();
  events.push_back(metadata(
      "process_name", pid, 0,
      options.process_name.empty() ? "rank " + std::to_string(pid) : options.process_name));
  events.push_back({{"ph", "M"},
                    {"name", "process_sort_index"},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"sort_index", pid}}}});
  for (const trace::ThreadEvents& t : session.threads) {
    events.push_back(metadata("thread_name", pid, t.tid, t.thread_name));
    for (const trace::Event& e : t.events) {
      const int64_t ts = e.start_us + options.clock_offset_us;
      if (e.is_counter) {
        events.push_back({{"ph", "C"},
                          {"name", e.name},
                          {"pid", pid},
                          {"tid", t.tid},
                          {"ts", ts},
                          {"args", {{e.name, e.value}}}});
        continue;
      }
      nlohmann::json x = {{"ph", "X"},      {"cat", trace::category_name(e.category)},
                          {"name", e.name}, {"pid", pid},
                          {"tid", t.tid},   {"ts", ts},
                          {"dur", e.dur_us}};
      if (!e.args.empty()) x["args"] = args_json(e.args);
      events.push_back(std::move(x));
    }
  }
  nlohmann::json sync = {{"pid", pid},
                         {"offset_us", options.clock_offset_us},
                         {"uncertainty_us", options.clock_uncertainty_us},
                         {"session_start_us", session.start_us + options.clock_offset_us},
                         {"session_stop_us", session.stop_us + options.clock_offset_us}};
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"producer", "osprey profiler"},
            {"clock", "steady clock in microseconds, on rank 0's clock"},
            {"clock_sync", nlohmann::json::array({std::move(sync)})}}}};
}

nlohmann::json merge_chrome_traces(const std::vector<nlohmann::json>& traces) {
  OSPREY_CHECK(!traces.empty(), "merge_chrome_traces: no traces to merge");
  nlohmann::json merged = traces[0];
  for (size_t i = 1; i < traces.size(); ++i) {
    const nlohmann::json& t = traces[i];
    OSPREY_CHECK(t.contains("traceEvents") && t["traceEvents"].is_array(),
                 "merge_chrome_traces: trace {} has no traceEvents array", i);
    for (const auto& e : t["traceEvents"]) merged["traceEvents"].push_back(e);
    if (t.contains("otherData") && t["otherData"].contains("clock_sync")) {
      for (const auto& s : t["otherData"]["clock_sync"]) {
        merged["otherData"]["clock_sync"].push_back(s);
      }
    }
  }
  return merged;
}

void write_chrome_trace(const std::filesystem::path& path, const nlohmann::json& trace) {
  atomic_write_file(path, trace.dump() + "\n");
}

}  // namespace osprey::io
