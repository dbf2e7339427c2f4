// What the tuner tests share (tuner_test.cpp, asha_test.cpp): the small classification problem
// they train on (4 features, 2 classes split by a line, 240 training rows, 8 batches of 32 an
// epoch, and 80 validation rows, the same every run), and a hypermodel that checks a promoted
// trial starts from where its parent stopped. Test-only: not installed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <vector>

#include "osprey/tensor/factory.h"
#include "osprey/train/trainer.h"
#include "osprey/tune/hyperband.h"
#include "osprey/tune/tuner.h"

namespace osprey::tune::test_data {

struct Data {
  Tensor x, y, xv, yv;
};

inline Data make_data() {
  std::mt19937 gen(123);
  std::normal_distribution<float> n(0, 1);
  auto make = [&](int rows, Tensor& x, Tensor& y) {
    std::vector<float> xs(static_cast<size_t>(rows) * 4);
    std::vector<int64_t> ys(static_cast<size_t>(rows));
    for (size_t i = 0; i < static_cast<size_t>(rows); ++i) {
      for (size_t k = 0; k < 4; ++k) xs[i * 4 + k] = n(gen);
      ys[i] = xs[i * 4] + 0.5f * xs[i * 4 + 1] > 0 ? 1 : 0;
    }
    x = from_vector(xs, Shape{rows, 4});
    y = from_vector(ys, Shape{rows});
  };
  Data d;
  make(240, d.x, d.y);
  make(80, d.xv, d.yv);
  return d;
}

// Checks, before a promoted trial (Hyperband, ASHA) trains, that its model is the state its
// parent ended in: the validation loss of the parent's last epoch, an optimizer that took every
// step of the parent's epochs (8 per epoch), an initial epoch that is the parent's epochs, and an
// end state kept apart exactly when the parent's best epoch was not its last. Subclasses build.
struct PromotionChecker : HyperModel {
  Tuner* tuner = nullptr;
  Data data;
  int promoted = 0;
  int from_a_later_epoch_than_the_best = 0;
  train::History fit(HyperParameters& hp, Model& model, const TrainData& d,
                     const train::FitOptions& o) override {
    if (hp.has_value(kTunerTrialId)) {
      const Trial& parent = tuner->oracle().get_trial(hp.get(kTunerTrialId).as_string());
      const EpochRecord& last = parent.executions.at(0).back();
      const auto logs = model.evaluate(data.xv, data.yv, {.batch_size = 32});
      const auto val_loss = std::find_if(last.metrics.begin(), last.metrics.end(),
                                         [](const auto& m) { return m.first == "val_loss"; });
      EXPECT_NE(val_loss, last.metrics.end());
      if (val_loss == last.metrics.end()) return {};
      EXPECT_NEAR(logs.at("loss"), val_loss->second, 1e-5);
      EXPECT_EQ(o.initial_epoch, hp.get(kTunerInitialEpoch).as_int());
      EXPECT_EQ(o.initial_epoch, parent.hyperparameters.get(kTunerEpochs).as_int());
      EXPECT_EQ(last.epoch + 1, o.initial_epoch);
      EXPECT_EQ(model.trainer().optimizer().iterations(), o.initial_epoch * 8);
      const bool best_was_earlier = parent.best_step < last.epoch;
      EXPECT_EQ(std::filesystem::exists(tuner->end_state_path(parent.trial_id)), best_was_earlier);
      from_a_later_epoch_than_the_best += best_was_earlier ? 1 : 0;
      ++promoted;
    }
    return HyperModel::fit(hp, model, d, o);
  }
};

}  // namespace osprey::tune::test_data
