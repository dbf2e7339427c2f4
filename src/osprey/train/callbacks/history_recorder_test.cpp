#include "osprey/train/callbacks/history_recorder.h"

#include <gtest/gtest.h>

#include <limits>

#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey::train {
namespace {

TEST(HistoryRecorderTest, KeepsEveryEpochsLogsAsHistoryJson) {
  osprey::Model m = osprey::Sequential({layers::Dense(1)}, {.input_shape = {2}});
  m.compile("sgd", "mse");
  auto rec = callbacks::HistoryRecorder();
  const auto history =
      m.fit(ones({8, 2}), ones({8, 1}), {.epochs = 2, .verbose = 0, .callbacks = {rec}});
  const nlohmann::json j = rec->to_json();
  EXPECT_EQ(j.at("format"), "osprey-history");
  EXPECT_EQ(j.at("version"), 1);
  ASSERT_EQ(j.at("epochs").size(), 2u);
  for (int e = 0; e < 2; ++e) {
    EXPECT_EQ(j.at("epochs")[e].at("epoch"), e);
    EXPECT_DOUBLE_EQ(j.at("epochs")[e].at("metrics").at("loss").get<double>(),
                     history.history.at("loss")[static_cast<size_t>(e)]);
  }
}

TEST(HistoryRecorderTest, StoresValuesThatAreNotFiniteAsStrings) {
  EXPECT_EQ(metric_to_json(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(metric_to_json(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(metric_to_json(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(metric_to_json(0.25), 0.25);
}

}  // namespace
}  // namespace osprey::train
