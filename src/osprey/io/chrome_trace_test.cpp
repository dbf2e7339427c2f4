#include "osprey/io/chrome_trace.h"

#include <gtest/gtest.h>

#include "osprey/io/json.h"
#include "osprey/io/temporary_directory.h"
#include "osprey/io/trace_summary.h"

namespace osprey::io {
namespace {

trace::Event span(trace::Category c, std::string name, int64_t start, int64_t dur,
                  trace::Args args = {}) {
  trace::Event e;
  e.category = c;
  e.name = std::move(name);
  e.start_us = start;
  e.dur_us = dur;
  e.args = std::move(args);
  return e;
}

// One thread: a layer [100, 150) holding matmul [105, 125) and relu [130, 135); a second
// matmul outside any layer [160, 170); a counter; a second thread with one data wait.
trace::Session sample_session() {
  trace::Session s;
  s.start_us = 90;
  s.stop_us = 200;
  trace::ThreadEvents main;
  main.tid = 1;
  main.thread_name = "main";
  main.events.push_back(span(trace::Category::op, "relu", 130, 5));
  main.events.push_back(span(trace::Category::layer, "sequential/dense", 100, 50));
  main.events.push_back(
      span(trace::Category::op, "matmul", 105, 20, {{"shapes", "[2, 3] [3, 4]"}}));
  main.events.push_back(span(trace::Category::op, "matmul", 160, 10));
  trace::Event c;
  c.is_counter = true;
  c.name = "bytes_in_use";
  c.start_us = 110;
  c.dur_us = 0;
  c.value = 4096;
  main.events.push_back(c);
  trace::ThreadEvents prefetch;
  prefetch.tid = 2;
  prefetch.thread_name = "prefetch";
  prefetch.events.push_back(span(trace::Category::data, "next_batch", 95, 40));
  s.threads = {main, prefetch};
  return s;
}

const nlohmann::json& event_named(const nlohmann::json& trace, const std::string& name,
                                  const std::string& ph) {
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == name && e["ph"] == ph) return e;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no event " << name << " " << ph;
  return none;
}

TEST(ChromeTraceTest, SpansCountersAndNamesBecomeTraceEventsOnRankZerosClock) {
  const nlohmann::json t =
      chrome_trace(sample_session(), {.pid = 1, .clock_offset_us = -50, .clock_uncertainty_us = 3});
  const auto& mm = event_named(t, "matmul", "X");
  EXPECT_EQ(mm["cat"], "op");
  EXPECT_EQ(mm["pid"], 1);
  EXPECT_EQ(mm["tid"], 1);
  EXPECT_EQ(mm["ts"], 55);  // 105 - 50
  EXPECT_EQ(mm["dur"], 20);
  EXPECT_EQ(mm["args"]["shapes"], "[2, 3] [3, 4]");
  const auto& c = event_named(t, "bytes_in_use", "C");
  EXPECT_EQ(c["ts"], 60);
  EXPECT_EQ(c["args"]["bytes_in_use"], 4096.0);
  EXPECT_EQ(event_named(t, "process_name", "M")["args"]["name"], "rank 1");
  bool prefetch_named = false;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 2) {
      prefetch_named = e["args"]["name"] == "prefetch";
    }
  }
  EXPECT_TRUE(prefetch_named);
  const auto& sync = t["otherData"]["clock_sync"];
  ASSERT_EQ(sync.size(), 1U);
  EXPECT_EQ(sync[0]["offset_us"], -50);
  EXPECT_EQ(sync[0]["uncertainty_us"], 3.0);
}

TEST(ChromeTraceTest, MergedTracesKeepEveryRanksEventsAndClockSync) {
  const nlohmann::json merged = merge_chrome_traces(
      {chrome_trace(sample_session(), {.pid = 0}), chrome_trace(sample_session(), {.pid = 1})});
  int x0 = 0, x1 = 0;
  for (const auto& e : merged["traceEvents"]) {
    if (e["ph"] != "X") continue;
    (e["pid"] == 0 ? x0 : x1) += 1;
  }
  EXPECT_EQ(x0, 5);
  EXPECT_EQ(x1, 5);
  EXPECT_EQ(merged["otherData"]["clock_sync"].size(), 2U);
}

TEST(ChromeTraceTest, TheWrittenFileParsesBack) {
  TemporaryDirectory dir("chrome_trace_test");
  const nlohmann::json t = chrome_trace(sample_session(), {.pid = 0});
  write_chrome_trace(dir.path() / "trace.json", t);
  EXPECT_EQ(read_json_file(dir.path() / "trace.json"), t);
}

TEST(TraceSummaryTest, SelfTimeIsSpanTimeLessItsChildrenOnTheSameThread) {
  const std::vector<SummaryRow> rows = summarize_trace(sample_session());
  ASSERT_EQ(rows.size(), 4U);
  // dense: 50 - 20 - 5; matmul: 20 + 10; next_batch on another thread: 40 (not dense's child).
  EXPECT_EQ(rows[0].name, "next_batch");
  EXPECT_EQ(rows[0].self_us, 40);
  EXPECT_EQ(rows[1].name, "matmul");
  EXPECT_EQ(rows[1].calls, 2);
  EXPECT_EQ(rows[1].self_us, 30);
  EXPECT_EQ(rows[1].total_us, 30);
  EXPECT_EQ(rows[2].name, "sequential/dense");
  EXPECT_EQ(rows[2].category, "layer");
  EXPECT_EQ(rows[2].self_us, 25);
  EXPECT_EQ(rows[2].total_us, 50);
  EXPECT_EQ(rows[3].name, "relu");
  EXPECT_EQ(rows[3].self_us, 5);
}

TEST(TraceSummaryTest, ByLayerSplitsOpsByTheLayerTheyRanIn) {
  const std::vector<SummaryRow> rows = summarize_trace(sample_session(), {.by_layer = true});
  ASSERT_EQ(rows.size(), 5U);
  int64_t in_dense = -1, outside = -1;
  for (const SummaryRow& r : rows) {
    if (r.name != "matmul") continue;
    (r.layer == "sequential/dense" ? in_dense : outside) = r.self_us;
  }
  EXPECT_EQ(in_dense, 20);
  EXPECT_EQ(outside, 10);
}

TEST(TraceSummaryTest, TheTableListsRowsBySelfTimeWithShares) {
  const std::string table = format_summary_table(summarize_trace(sample_session()), {.top = 2});
  const std::string expected =
      "--------------------------------------------------------------------------------\n"
      "Name        Category      Self %         Self        Total         Mean    Calls\n"
      "--------------------------------------------------------------------------------\n"
      "next_batch  data          40.00%         40us         40us         40us        1\n"
      "matmul      op            30.00%         30us         30us         15us        2\n"
      "--------------------------------------------------------------------------------\n"
      "Self time total: 100us\n";
  EXPECT_EQ(table, expected);
}

}  // namespace
}  // namespace osprey::io
