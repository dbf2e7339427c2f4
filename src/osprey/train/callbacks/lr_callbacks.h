// Callbacks that steer the learning rate: LearningRateScheduler (a function of the epoch and
// the current rate, as Keras) and ReduceLROnPlateau (multiply by `factor` after `patience`
// epochs without improvement of the monitored value).
//   auto halve = os::callbacks::LearningRateScheduler([](int epoch, double lr) {
//     return epoch < 10 ? lr : lr * 0.5; });
//   auto plateau = os::callbacks::ReduceLROnPlateau({.factor = 0.5, .patience = 3});
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "osprey/train/callback.h"

namespace osprey::train {

class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(std::function<double(int epoch, double lr)> schedule,
                                 int verbose = 0);
  void on_epoch_begin(int epoch, const Logs& logs) override;
  std::shared_ptr<Callback> clone() const override {
    return std::make_shared<LearningRateScheduler>(schedule_, verbose_);
  }

 private:
  std::function<double(int, double)> schedule_;
  int verbose_;
};

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0.0;
};

class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  std::shared_ptr<Callback> clone() const override {
    return std::make_shared<ReduceLROnPlateau>(o_);
  }

 private:
  ReduceLROnPlateauOptions o_;
  bool maximize_ = false;
  double best_ = 0.0;
  int wait_ = 0, cooldown_left_ = 0;
};

}  // namespace osprey::train

// Keras's spellings (keras.callbacks.LearningRateScheduler, keras.callbacks.ReduceLROnPlateau).
namespace osprey::callbacks {
inline std::shared_ptr<train::LearningRateScheduler> LearningRateScheduler(
    std::function<double(int epoch, double lr)> schedule, int verbose = 0) {
  return std::make_shared<train::LearningRateScheduler>(std::move(schedule), verbose);
}
inline std::shared_ptr<train::ReduceLROnPlateau> ReduceLROnPlateau(
    train::ReduceLROnPlateauOptions options = {}) {
  return std::make_shared<train::ReduceLROnPlateau>(std::move(options));
}
}  // namespace osprey::callbacks
