// TensorBoard event files, read back by an independent decoder (tfevents_reader.h). Skipped,
// with the reason, without /usr/bin/python3 and its protobuf module.
#include "osprey/io/event_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "osprey/core/error.h"
#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/io/tfevents_reader.h"

namespace osprey::io {
namespace {

using testing::run_python;
using testing::TempDir;

TEST(EventFileTest, MaskedCrcIsTfRecords) {
  // TFRecord's mask of CRC32C("123456789") = 0xe3069283 (the CRC32C check value).
  const uint32_t crc = 0xe3069283U;
  EXPECT_EQ(masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8U);
}

TEST(EventFileTest, ScalarsAndHistogramsReadBackThroughTensorBoardsFieldNumbers) {
  if (!have_python_protobuf()) GTEST_SKIP() << "/usr/bin/python3 with protobuf is not available";
  TempDir dir;
  std::vector<float> weights(1000);
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.5f, 2.0f);
  for (float& w : weights) w = normal(gen);
  std::filesystem::path file;
  {
    EventFileWriter w(dir / "logs" / "train");
    file = w.path();
    w.add_scalar("epoch_loss", 0.6931471805599453, 0);
    w.add_scalar("epoch_loss", 0.25, 1);
    w.add_histogram("sequential/dense/kernel", weights.data(), 1000, 1);
  }
  EXPECT_EQ(file.parent_path(), dir / "logs" / "train");
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u) << file;
  const nlohmann::json events =
      parse_json(run_python(dir.path(), "reader", kTfEventsReader, file.string()), "python output");
  ASSERT_EQ(events.size(), 4u) << events.dump();
  EXPECT_EQ(events[0]["file_version"], "brain.Event:2");
  EXPECT_GT(events[0]["wall_time"].get<double>(), 1.7e9);
  EXPECT_EQ(events[1]["step"], 0);
  EXPECT_EQ(events[1]["values"][0]["tag"], "epoch_loss");
  EXPECT_EQ(events[1]["values"][0]["simple_value"].get<double>(),
            static_cast<double>(0.6931471805599453f));
  EXPECT_EQ(events[2]["step"], 1);
  EXPECT_EQ(events[2]["values"][0]["simple_value"].get<double>(), 0.25);

  const nlohmann::json& h = events[3]["values"][0]["histo"];
  EXPECT_EQ(events[3]["values"][0]["tag"], "sequential/dense/kernel");
  EXPECT_EQ(events[3]["step"], 1);
  double lo = weights[0], hi = weights[0], sum = 0.0, squares = 0.0;
  for (float x : weights) {
    lo = std::min<double>(lo, x);
    hi = std::max<double>(hi, x);
    sum += x;
    squares += static_cast<double>(x) * x;
  }
  EXPECT_EQ(h["min"].get<double>(), lo);
  EXPECT_EQ(h["max"].get<double>(), hi);
  EXPECT_EQ(h["num"].get<double>(), 1000.0);
  EXPECT_NEAR(h["sum"].get<double>(), sum, 1e-9 * std::abs(sum) + 1e-9);
  EXPECT_NEAR(h["sum_squares"].get<double>(), squares, 1e-9 * squares);
  // 30 equal-width buckets: the right edges, and counts that a hand count agrees with.
  ASSERT_EQ(h["bucket"].size(), 30u);
  ASSERT_EQ(h["bucket_limit"].size(), 30u);
  EXPECT_EQ(h["bucket_limit"][29].get<double>(), hi);
  std::vector<double> want(30, 0.0);
  for (float x : weights) {
    int b = 0;
    while (b < 29 && x > h["bucket_limit"][static_cast<size_t>(b)].get<double>()) ++b;
    want[static_cast<size_t>(b)] += 1.0;
  }
  double total = 0.0;
  for (size_t b = 0; b < 30; ++b) {
    EXPECT_EQ(h["bucket"][b].get<double>(), want[b]) << "bucket " << b;
    total += h["bucket"][b].get<double>();
  }
  EXPECT_EQ(total, 1000.0);
}

// The hparams plugin's three summaries, decoded with messages declared from TensorBoard's
// api.proto and plugin_data.proto: the tags and plugin name the plugin looks for, the empty float
// tensor it lists them by, version 0, and every value and domain as written.
TEST(EventFileTest, HParamsExperimentAndSessionReadBackAsThePluginExpects) {
  if (!have_python_protobuf()) GTEST_SKIP() << "/usr/bin/python3 with protobuf is not available";
  TempDir dir;
  std::filesystem::path file;
  {
    EventFileWriter w(dir / "logs");
    file = w.path();
    w.add_hparams_experiment(
        {{.name = "units", .range = std::make_pair(16.0, 64.0)},
         {.name = "optimizer", .values = {std::string("adam"), std::string("sgd")}},
         {.name = "bn", .values = {false, true}},
         {.name = "mixed", .values = {1.0, std::string("x")}}},
        {{.group = "validation", .tag = "epoch_accuracy"},
         {.group = "train", .tag = "epoch_loss"}});
    w.add_session_start({{"units", 48.0}, {"optimizer", std::string("sgd")}, {"bn", true}},
                        "trial_7");
    w.add_session_end(SessionStatus::success);
  }
  const nlohmann::json events =
      parse_json(run_python(dir.path(), "reader", kTfEventsReader, file.string()), "python output");
  ASSERT_EQ(events.size(), 4u) << events.dump();
  const std::vector<std::string> tags = {"_hparams_/experiment", "_hparams_/session_start_info",
                                         "_hparams_/session_end_info"};
  for (size_t i = 0; i < 3; ++i) {
    const nlohmann::json& v = events[i + 1]["values"][0];
    EXPECT_EQ(v["tag"], tags[i]);
    EXPECT_EQ(v["plugin"], "hparams");
    EXPECT_EQ(v["tensor"]["dtype"], 1);  // DT_FLOAT
    EXPECT_EQ(v["tensor"]["shape"], nlohmann::json::array({0}));
    EXPECT_EQ(v["hparams"]["version"], 0);
    EXPECT_EQ(events[i + 1]["step"], 0);
  }
  const nlohmann::json& e = events[1]["values"][0]["hparams"];
  EXPECT_EQ(e["data"], "experiment");
  EXPECT_GT(e["time_created_secs"].get<double>(), 1.7e9);
  // DataType: 3 FLOAT64 for an interval, 1 STRING, 2 BOOL, 0 UNSET for mixed values.
  EXPECT_EQ(e["hparam_infos"], nlohmann::json::parse(R"([
      {"name": "units", "type": 3, "discrete": null, "interval": [16.0, 64.0]},
      {"name": "optimizer", "type": 1, "discrete": ["adam", "sgd"], "interval": null},
      {"name": "bn", "type": 2, "discrete": [false, true], "interval": null},
      {"name": "mixed", "type": 0, "discrete": [1.0, "x"], "interval": null}])"));
  // DatasetType: 2 VALIDATION, 1 TRAINING.
  EXPECT_EQ(e["metric_infos"], nlohmann::json::parse(R"([
      {"group": "validation", "tag": "epoch_accuracy", "dataset_type": 2},
      {"group": "train", "tag": "epoch_loss", "dataset_type": 1}])"));
  const nlohmann::json& start = events[2]["values"][0]["hparams"];
  EXPECT_EQ(start["data"], "session_start_info");
  EXPECT_EQ(start["hparams"],
            nlohmann::json::parse(R"({"units": 48.0, "optimizer": "sgd", "bn": true})"));
  EXPECT_EQ(start["group_name"], "trial_7");
  EXPECT_GT(start["start_time_secs"].get<double>(), 1.7e9);
  const nlohmann::json& end = events[3]["values"][0]["hparams"];
  EXPECT_EQ(end["data"], "session_end_info");
  EXPECT_EQ(end["status"], 1);  // STATUS_SUCCESS
  EXPECT_GE(end["end_time_secs"].get<double>(), start["start_time_secs"].get<double>());
}

TEST(EventFileTest, AFileWhereTheFolderShouldBeIsAnIoErrorNamingIt) {
  TempDir dir;
  testing::write_bytes(dir / "logs", "not a folder");
  try {
    EventFileWriter w(dir / "logs");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("TensorBoard: cannot create the log folder " +
                                         (dir / "logs").string()),
              std::string::npos)
        << e.what();
  }
}

TEST(EventFileTest, ANonFiniteValueInAHistogramIsAnErrorNamingTheTag) {
  TempDir dir;
  EventFileWriter w(dir.path());
  const float values[] = {1.0f, NAN, 2.0f};
  try {
    w.add_histogram("dense/kernel", values, 3, 0);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), "TensorBoard: histogram 'dense/kernel' holds nan at index 1");
  }
}

}  // namespace
}  // namespace osprey::io
