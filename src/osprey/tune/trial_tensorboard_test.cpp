// A search with a TensorBoard callback, read back by the independent Python reader: one run per
// trial execution with its scalars, the HPARAMS tab's session (the trial's values, grouped by
// trial) beside it, and the experiment (domains, metrics) in the root folder.
#include "osprey/tune/trial_tensorboard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/io/tfevents_reader.h"
#include "osprey/nn/layers/all.h"
#include "osprey/train/callbacks/tensorboard.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/tuner_test_data.h"

namespace osprey::tune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Model build_model(HyperParameters& hp) {
  const int64_t units = hp.Int("units", 2, 16, {.step = 2});
  const std::string opt = hp.Choice("optimizer", {"adam", "sgd"});
  Model model =
      Sequential({layers::Dense(units, "relu"), layers::Dense(2, "softmax")}, {.input_shape = {4}});
  model.compile(opt, "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

// The events of the one event file directly in `dir`.
json read_run(const io::testing::TempDir& tmp, const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  EXPECT_EQ(files.size(), 1u) << dir;
  if (files.size() != 1) return json::array();
  return io::parse_json(
      io::testing::run_python(tmp.path(), "reader", io::kTfEventsReader, files[0].string()),
      "python output");
}

// The hparams plugin data of a run's events, by tag.
std::map<std::string, json> plugin_data(const json& events) {
  std::map<std::string, json> out;
  for (const json& e : events) {
    for (const json& v : e["values"]) {
      if (v.contains("hparams")) out[v["tag"]] = v["hparams"];
    }
  }
  return out;
}

TEST(TrialTensorBoardTest, EachExecutionIsARunAndASessionAndTheRootHoldsTheExperiment) {
  if (!io::have_python_protobuf())
    GTEST_SKIP() << "/usr/bin/python3 with protobuf is not available";
  io::testing::TempDir tmp;
  const fs::path logs = tmp / "logs";
  const test_data::Data d = test_data::make_data();
  RandomSearch tuner(build_model, {.objective = "val_accuracy",
                                   .max_trials = 2,
                                   .executions_per_trial = 2,
                                   .directory = (tmp / "search").string(),
                                   .project_name = "p",
                                   .seed = 3,
                                   .verbose = 0});
  tuner.search(d.x, d.y,
               {.batch_size = 32,
                .epochs = 2,
                .verbose = 0,
                .callbacks = {callbacks::TensorBoard(logs)},
                .validation_data = train::ValidationData(d.xv, d.yv),
                .seed = 1});
  ASSERT_EQ(tuner.oracle().trials().size(), 2u);
  std::set<std::string> runs;
  for (const auto& e : fs::directory_iterator(logs)) {
    if (e.is_directory()) runs.insert(e.path().filename().string());
  }
  std::set<std::string> want_runs;
  for (const Trial& t : tuner.oracle().trials()) {
    const std::string group = "trial_" + t.trial_id;
    want_runs.insert(group);
    ASSERT_EQ(t.executions.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const fs::path run = logs / group / ("execution_" + std::to_string(k));
      // The session: the trial's values (numbers as doubles), its group, a successful end.
      const auto session = plugin_data(read_run(tmp, run));
      ASSERT_EQ(session.count("_hparams_/session_start_info"), 1u) << run;
      const json& start = session.at("_hparams_/session_start_info");
      EXPECT_EQ(start["group_name"], group);
      EXPECT_EQ(start["hparams"],
                json({{"units", static_cast<double>(t.hyperparameters.get("units").as_int())},
                      {"optimizer", t.hyperparameters.get("optimizer").as_string()}}));
      EXPECT_EQ(session.at("_hparams_/session_end_info")["status"], 1);  // STATUS_SUCCESS
      // Its metrics: the validation run's epoch_accuracy is what the trial reported (float32).
      std::map<int64_t, double> accuracy;
      for (const json& e : read_run(tmp, run / "validation")) {
        for (const json& v : e["values"]) {
          if (v["tag"] == "epoch_accuracy") accuracy[e["step"]] = v["simple_value"];
        }
      }
      ASSERT_EQ(accuracy.size(), 2u) << run;
      for (const EpochRecord& r : t.executions[k]) {
        for (const auto& [name, value] : r.metrics) {
          if (name == "val_accuracy") {
            EXPECT_EQ(accuracy.at(r.epoch), static_cast<double>(static_cast<float>(value)));
          }
        }
      }
      EXPECT_TRUE(fs::is_directory(run / "train")) << run;
    }
  }
  EXPECT_EQ(runs, want_runs);  // no run of the search's own callback at the root
  // The experiment: each hyperparameter's domain and every metric the trials reported.
  const auto root = plugin_data(read_run(tmp, logs));
  ASSERT_EQ(root.count("_hparams_/experiment"), 1u);
  const json& experiment = root.at("_hparams_/experiment");
  EXPECT_EQ(experiment["hparam_infos"], json::parse(R"([
      {"name": "units", "type": 3, "discrete": null, "interval": [2.0, 16.0]},
      {"name": "optimizer", "type": 1, "discrete": ["adam", "sgd"], "interval": null}])"));
  EXPECT_EQ(experiment["metric_infos"], json::parse(R"([
      {"group": "train", "tag": "epoch_accuracy", "dataset_type": 1},
      {"group": "train", "tag": "epoch_loss", "dataset_type": 1},
      {"group": "validation", "tag": "epoch_accuracy", "dataset_type": 2},
      {"group": "validation", "tag": "epoch_loss", "dataset_type": 2}])"));
}

}  // namespace
}  // namespace osprey::tune
