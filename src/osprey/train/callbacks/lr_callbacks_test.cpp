#include "osprey/train/callbacks/lr_callbacks.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::train {
namespace {

osprey::Model tiny() {
  osprey::Model m = osprey::Sequential({layers::Dense(1)}, {.input_shape = {1}});
  m.compile("sgd", "mse");
  return m;
}

TEST(LearningRateSchedulerTest, SetsTheRateAtEachEpochBegin) {
  osprey::Model m = tiny();
  auto s =
      std::make_shared<LearningRateScheduler>([](int epoch, double) { return 0.1 / (epoch + 1); });
  m.fit(ones({4, 1}), ones({4, 1}), {.epochs = 3, .verbose = 0, .callbacks = {s}});
  EXPECT_NEAR(m.trainer().optimizer().learning_rate(), 0.1 / 3, 1e-15);
}

TEST(ReduceLROnPlateauTest, MultipliesTheRateAfterPatienceEpochsWithoutImprovement) {
  osprey::Model m = tiny();
  ReduceLROnPlateau r({.monitor = "loss", .factor = 0.5, .patience = 2, .min_delta = 0.0});
  r.set_model(&m);
  r.on_train_begin({});
  const double lr0 = m.trainer().optimizer().learning_rate();
  const std::vector<double> losses = {1.0, 0.9, 0.95, 0.92, 0.91, 0.93};
  std::vector<double> rates;
  for (int e = 0; e < 6; ++e) {
    Logs logs;
    logs.set("loss", losses[static_cast<size_t>(e)]);
    r.on_epoch_end(e, logs);
    rates.push_back(m.trainer().optimizer().learning_rate());
  }
  // Epochs 2 and 3 do not beat 0.9: halve after epoch 3; epochs 4 and 5 neither: halve again.
  EXPECT_EQ(rates, (std::vector<double>{lr0, lr0, lr0, lr0 / 2, lr0 / 2, lr0 / 4}));
}

}  // namespace
}  // namespace osprey::train
