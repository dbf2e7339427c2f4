#include "osprey/train/callbacks/checkpoint_csv.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey::train {
namespace {

TEST(CSVLoggerTest, WritesAHeaderAndOneRowPerEpoch) {
  const auto path = std::filesystem::temp_directory_path() / "osprey_csvlogger_test.csv";
  osprey::Model m = osprey::Sequential({layers::Dense(1)}, {.input_shape = {2}});
  m.compile("sgd", "mse");
  m.fit(ones({8, 2}), ones({8, 1}),
        {.epochs = 3, .verbose = 0, .callbacks = {std::make_shared<CSVLogger>(path.string())}});
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "epoch,loss");
  int rows = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(line.substr(0, 2), std::to_string(rows) + ",");
    ++rows;
  }
  EXPECT_EQ(rows, 3);
  std::filesystem::remove(path);
}

TEST(CSVLoggerTest, CreatesTheFoldersOfItsPathAndNamesOneItCannotCreate) {
  const auto dir = std::filesystem::temp_directory_path() / "osprey_csvlogger_dirs";
  std::filesystem::remove_all(dir);
  CSVLogger logger((dir / "logs" / "run1.csv").string());
  logger.on_train_begin({});
  Logs logs;
  logs.set("loss", 0.5);
  logger.on_epoch_end(0, logs);
  logger.on_train_end({});
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "logs" / "run1.csv"));
  // A file where a folder of the path should be.
  const auto blocked = (dir / "logs" / "run1.csv" / "inner.csv").string();
  CSVLogger bad(blocked);
  try {
    bad.on_train_begin({});
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind(fmt::format("CSVLogger: cannot create the folder {} for {}: ",
                                                (dir / "logs" / "run1.csv").string(), blocked),
                                    0),
        0u)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(ModelCheckpointTest, SaveBestOnlySavesOnImprovement) {
  const auto dir = std::filesystem::temp_directory_path() / "osprey_ckpt_test";
  std::filesystem::remove_all(dir);
  osprey::Model m = osprey::Sequential({layers::Dense(1)}, {.input_shape = {1}});
  m.compile("sgd", "mse");
  ModelCheckpoint ckpt((dir / "e{epoch}").string(),
                       {.monitor = "val_loss", .save_best_only = true});
  ckpt.set_model(&m);
  ckpt.on_train_begin({});
  const std::vector<double> val = {1.0, 0.8, 0.9, 0.7};
  for (int e = 0; e < 4; ++e) {
    Logs logs;
    logs.set("val_loss", val[static_cast<size_t>(e)]);
    ckpt.on_epoch_end(e, logs);
  }
  EXPECT_EQ(ckpt.saved(), (std::vector<std::string>{(dir / "e1").string(), (dir / "e2").string(),
                                                    (dir / "e4").string()}));
  EXPECT_TRUE(std::filesystem::exists(dir / "e4" / "model.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir / "e3"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace osprey::train
