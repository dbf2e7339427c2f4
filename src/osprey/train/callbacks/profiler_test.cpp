// The Profiler callback end to end: a small Dense model trained under it writes a trace that
// parses, holds the spans of the requested steps only, and a summary.
#include "osprey/train/callbacks/profiler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "osprey/core/error_of_test.h"
#include "osprey/core/trace.h"
#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/io/trace_summary.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey::train {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The trace's spans as a Session again, to summarize what was written.
trace::Session spans_of(const nlohmann::json& t) {
  std::map<int, trace::ThreadEvents> threads;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    trace::Event ev;
    ev.name = e["name"];
    ev.start_us = e["ts"];
    ev.dur_us = e["dur"];
    threads[e["tid"].get<int>()].events.push_back(ev);
  }
  trace::Session s;
  for (auto& [tid, events] : threads) s.threads.push_back(events);
  return s;
}

TEST(ProfilerTest, ADenseModelsTraceHoldsTheWindowsOpsLayersOptimizerDataAndMemory) {
  io::testing::TempDir tmp;
  const fs::path logs = tmp / "profile";
  const Tensor x = random_normal({64, 3}, {.seed = 4});
  const Tensor y = random_uniform({64, 1}, {.seed = 5});
  nn::clear_session();
  osprey::Model m =
      osprey::Sequential({layers::Dense(4, "relu"), layers::Dense(1)}, {.input_shape = {3}});
  m.compile("sgd", "mse");
  // 4 steps per epoch, 2 epochs: the window 2-4 is steps 2 and 3 of epoch 0 and step 0 of 1.
  m.fit(x, y,
        {.batch_size = 16,
         .epochs = 2,
         .verbose = 0,
         .callbacks = {osprey::callbacks::Profiler(logs, {.steps = {2, 4}})}});
  EXPECT_FALSE(trace::enabled());

  const nlohmann::json t = io::read_json_file(logs / "trace.json");
  std::map<std::string, std::multiset<std::string>> by_cat;  // cat -> names of X events
  std::multiset<std::string> step_args;
  bool kernel_seen = false, counters = false;
  std::set<std::string> linear_shapes;
  std::set<int> pids;
  for (const auto& e : t["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["ph"] == "C" && e["name"] == "bytes_in_use") counters = e["args"]["bytes_in_use"] > 0;
    if (e["ph"] != "X") continue;
    by_cat[e["cat"]].insert(e["name"]);
    if (e["cat"] == "step") step_args.insert(e["args"]["step"].get<std::string>());
    if (e["cat"] == "op" && e["name"] == "linear") {
      EXPECT_EQ(e["args"]["dtype"], "float32");
      linear_shapes.insert(e["args"]["input_shapes"].get<std::string>());
    }
    if (e.contains("args") && e["args"].contains("kernel")) kernel_seen = true;
  }
  EXPECT_EQ(pids, std::set<int>{0});
  // Three steps, each with two dense layers: forward and backward of both linear ops.
  EXPECT_EQ(step_args, (std::multiset<std::string>{"2", "3", "0"}));
  EXPECT_EQ(by_cat["op"].count("linear"), 6U);
  EXPECT_EQ(by_cat["op_backward"].count("linear"), 6U);
  EXPECT_EQ(by_cat["layer"].count("sequential/dense"), 3U);
  EXPECT_EQ(by_cat["layer"].count("sequential/dense_1"), 3U);
  EXPECT_EQ(by_cat["optimizer"].count("SGD"), 3U);
  // Steps 2, 3 and 4's batches, and the end of epoch 0 (the wait that finds no batch).
  EXPECT_EQ(by_cat["data"].count("next_batch"), 4U);
  EXPECT_EQ(linear_shapes, (std::set<std::string>{"[16, 3] [3, 4] [4]", "[16, 4] [4, 1] [1]"}));
  EXPECT_TRUE(kernel_seen) << "no oneDNN kernel name on any span";
  EXPECT_TRUE(counters);

  const std::vector<io::SummaryRow> rows = io::summarize_trace(spans_of(t));
  int64_t self = 0, total = 0;
  for (const io::SummaryRow& r : rows) {
    EXPECT_GE(r.self_us, 0) << r.name;
    EXPECT_LE(r.self_us, r.total_us) << r.name;
    self += r.self_us;
    total += r.total_us;
  }
  EXPECT_LE(self, total);
  const std::string summary = read_text(logs / "summary.txt");
  EXPECT_EQ(summary.rfind("osprey profile: steps 2-4, rank 0", 0), 0U) << summary;
  EXPECT_NE(summary.find("linear"), std::string::npos);
  EXPECT_NE(summary.find("sequential/dense: linear"), std::string::npos);  // the by-layer table
}

TEST(ProfilerTest, NothingIsRecordedOutsideTheWindowOrWithoutTheCallback) {
  nn::clear_session();
  osprey::Model m = osprey::Sequential({layers::Dense(2)}, {.input_shape = {3}});
  m.compile("sgd", "mse");
  m.fit(random_normal({8, 3}, {.seed = 1}), random_normal({8, 2}, {.seed = 2}),
        {.batch_size = 4, .epochs = 1, .verbose = 0});
  EXPECT_FALSE(trace::enabled());
  trace::start();
  const trace::Session s = trace::stop();
  EXPECT_TRUE(s.threads.empty());
}

TEST(ProfilerTest, AWindowTrainingNeverReachesWritesNothingAndSaysSo) {
  nn::clear_session();
  const fs::path dir = fs::temp_directory_path() / "osprey_profiler_never";
  fs::remove_all(dir);
  osprey::Model m = osprey::Sequential({layers::Dense(2)}, {.input_shape = {3}});
  m.compile("sgd", "mse");
  ::testing::internal::CaptureStderr();
  m.fit(random_normal({8, 3}, {.seed = 1}), random_normal({8, 2}, {.seed = 2}),
        {.batch_size = 4,
         .epochs = 1,
         .verbose = 0,
         .callbacks = {callbacks::Profiler(dir, {.steps = {20, 30}})}});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("osprey: warning: the profiler recorded nothing: training ended after 2 "
                     "steps, before step 20 (steps count from 0 across epochs)"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(dir / "trace.json"));
  EXPECT_FALSE(trace::enabled());
}

TEST(ProfilerTest, BadStepRangesNameTheirSource) {
  EXPECT_EQ(testing::error_of<ValueError>([] {
              osprey::callbacks::Profiler("logs", {.steps = {30, 20}});
            }),
            "Profiler: the steps must satisfy 0 <= first <= last. Received: first=30, last=20");
  EXPECT_EQ(testing::error_of<ValueError>([] { parse_profile_steps("20-x", "--profile-steps"); }),
            "--profile-steps: expected a step range FIRST-LAST or one step (e.g. 20-30). "
            "Received: '20-x'");
  EXPECT_EQ(testing::error_of<ValueError>([] { parse_profile_steps("9-3", "--profile-steps"); }),
            "--profile-steps: the steps must satisfy 0 <= first <= last. Received: first=9, "
            "last=3");
  const ProfileSteps one = parse_profile_steps("25", "--profile-steps");
  EXPECT_EQ(one.first, 25);
  EXPECT_EQ(one.last, 25);
  const ProfileSteps range = parse_profile_steps("20-30", "--profile-steps");
  EXPECT_EQ(range.first, 20);
  EXPECT_EQ(range.last, 30);
}

}  // namespace
}  // namespace osprey::train
