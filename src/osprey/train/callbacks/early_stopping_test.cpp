#include "osprey/train/callbacks/early_stopping.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey::train {
namespace {

TEST(EarlyStoppingTest, StopsAfterPatienceAndRestoresTheBestEpoch) {
  osprey::Model model = osprey::Sequential({layers::Dense(1)}, {.input_shape = {1}});
  model.compile("sgd", "mse");
  EarlyStopping es({.monitor = "val_loss", .patience = 2, .restore_best_weights = true});
  es.set_model(&model);
  const std::vector<double> script = {1.0, 0.5, 0.6, 0.4, 0.45, 0.41, 0.7, 0.3};
  es.on_train_begin({});
  int last = -1;
  for (int epoch = 0; epoch < static_cast<int>(script.size()) && !model.stop_training(); ++epoch) {
    Tensor w = model.variables()[0].value();
    w.fill_(epoch);  // the weights "of" this epoch
    Logs logs;
    logs.set("val_loss", script[static_cast<size_t>(epoch)]);
    es.on_epoch_end(epoch, logs);
    last = epoch;
  }
  es.on_train_end({});
  EXPECT_EQ(last, 5);  // best at epoch 3 (0.4); epochs 4 and 5 do not improve
  EXPECT_EQ(es.stopped_epoch(), 5);
  EXPECT_EQ(es.best_epoch(), 3);
  EXPECT_EQ(model.variables()[0].value().at({0, 0}), 3.0);
}

TEST(EarlyStoppingTest, MaximizesAccuracyInAutoModeAndHonorsMinDelta) {
  osprey::Model model = osprey::Sequential({layers::Dense(1)}, {.input_shape = {1}});
  EarlyStopping es({.monitor = "val_accuracy", .min_delta = 0.01, .patience = 1});
  es.set_model(&model);
  es.on_train_begin({});
  const std::vector<double> acc = {0.80, 0.85, 0.855, 0.856};
  int last = -1;
  for (int epoch = 0; epoch < 4 && !model.stop_training(); ++epoch) {
    Logs logs;
    logs.set("val_accuracy", acc[static_cast<size_t>(epoch)]);
    es.on_epoch_end(epoch, logs);
    last = epoch;
  }
  EXPECT_EQ(last, 2);  // 0.855 is not 0.01 better than 0.85
  EXPECT_EQ(es.best_epoch(), 1);
}

TEST(EarlyStoppingTest, AMissingMonitorIsAClearError) {
  osprey::Model model = osprey::Sequential({layers::Dense(1)}, {.input_shape = {1}});
  EarlyStopping es;
  es.set_model(&model);
  es.on_train_begin({});
  Logs logs;
  logs.set("loss", 1.0);
  try {
    es.on_epoch_end(0, logs);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("the monitored value 'val_loss' is not in the logs"),
              std::string::npos);
  }
}

TEST(EarlyStoppingTest, StopsARealFitEarly) {
  osprey::Model model = osprey::Sequential({layers::Dense(1)}, {.input_shape = {2}});
  model.compile("sgd", "mse");
  const Tensor x = random_normal({64, 2}, {.seed = 1});
  const Tensor y = random_normal({64, 1}, {.seed = 2});  // noise: val_loss soon stops improving
  auto es = osprey::callbacks::EarlyStopping({.patience = 1});  // Keras's spelling
  History h =
      model.fit(x, y, {.epochs = 200, .verbose = 0, .callbacks = {es}, .validation_split = 0.25});
  EXPECT_LT(h.history["val_loss"].size(), 200u);
  EXPECT_EQ(es->stopped_epoch() + 1, static_cast<int>(h.history["val_loss"].size()));
}

}  // namespace
}  // namespace osprey::train
