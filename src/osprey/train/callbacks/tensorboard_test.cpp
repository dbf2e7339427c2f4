// The TensorBoard callback's files, read back by the independent Python reader: one run per
// folder (train, validation), Keras's tags, the History's numbers, and weight histograms.
#include "osprey/train/callbacks/tensorboard.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/io/tfevents_reader.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey::train {
namespace {

namespace fs = std::filesystem;

// The events of the one event file in `dir`.
nlohmann::json read_run(const io::testing::TempDir& tmp, const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  EXPECT_EQ(files.size(), 1u) << dir;
  return io::parse_json(
      io::testing::run_python(tmp.path(), "reader", io::kTfEventsReader, files.at(0).string()),
      "python output");
}

// tag -> (step -> value) of a run's scalars; "histo:<tag>" -> step -> number of values.
std::map<std::string, std::map<int64_t, double>> by_tag(const nlohmann::json& events) {
  std::map<std::string, std::map<int64_t, double>> out;
  for (const auto& e : events) {
    for (const auto& v : e["values"]) {
      if (v.contains("histo")) {
        out["histo:" + v["tag"].get<std::string>()][e["step"]] = v["histo"]["num"];
      } else {
        out[v["tag"]][e["step"]] = v["simple_value"];
      }
    }
  }
  return out;
}

TEST(TensorBoardTest, EpochLogsAndHistogramsReadBackAsKerasLaysThemOut) {
  if (!io::have_python_protobuf())
    GTEST_SKIP() << "/usr/bin/python3 with protobuf is not available";
  io::testing::TempDir tmp;
  const fs::path logs = tmp / "logs";
  const Tensor x = random_normal({64, 3}, {.seed = 4});
  const Tensor y = random_uniform({64, 1}, {.seed = 5});
  nn::clear_session();  // the histogram tags below name the layers dense and dense_1
  osprey::Model m =
      osprey::Sequential({layers::Dense(4, "relu"), layers::Dense(1)}, {.input_shape = {3}});
  m.compile("sgd", "mse", {"mae"});
  const History h =
      m.fit(x, y,
            {.batch_size = 16,
             .epochs = 3,
             .verbose = 0,
             .callbacks = {osprey::callbacks::TensorBoard(logs, {.histogram_freq = 2})},
             .validation_split = 0.25});

  const nlohmann::json train = read_run(tmp, logs / "train");
  EXPECT_EQ(train[0]["file_version"], "brain.Event:2");
  const auto t = by_tag(train);
  const auto v = by_tag(read_run(tmp, logs / "validation"));
  for (const std::string name : {"loss", "mae"}) {
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const auto e = static_cast<size_t>(epoch);
      EXPECT_EQ(t.at("epoch_" + name).at(epoch), static_cast<float>(h.history.at(name)[e]))
          << name << " epoch " << epoch;
      EXPECT_EQ(v.at("epoch_" + name).at(epoch), static_cast<float>(h.history.at("val_" + name)[e]))
          << "val_" << name << " epoch " << epoch;
    }
  }
  EXPECT_EQ(v.count("epoch_val_loss"), 0u);
  // histogram_freq 2 of 3 epochs: after the second (step 1) only, for every weight by path.
  EXPECT_EQ(t.at("histo:sequential/dense/kernel"), (std::map<int64_t, double>{{1, 12.0}}));
  EXPECT_EQ(t.at("histo:sequential/dense/bias"), (std::map<int64_t, double>{{1, 4.0}}));
  EXPECT_EQ(t.at("histo:sequential/dense_1/kernel"), (std::map<int64_t, double>{{1, 4.0}}));
  EXPECT_EQ(t.at("histo:sequential/dense_1/bias"), (std::map<int64_t, double>{{1, 1.0}}));
}

TEST(TensorBoardTest, ANegativeHistogramFrequencyIsRefused) {
  EXPECT_THROW(TensorBoard("logs", {.histogram_freq = -1}), ValueError);
}

}  // namespace
}  // namespace osprey::train
