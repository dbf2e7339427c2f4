#include "osprey/train/callbacks/lr_callbacks.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::train {

LearningRateScheduler::LearningRateScheduler(std::function<double(int, double)> schedule,
                                             int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  OSPREY_CHECK(static_cast<bool>(schedule_),
               "LearningRateScheduler: the schedule function is empty");
}

void LearningRateScheduler::on_epoch_begin(int epoch, const Logs&) {
  optim::Optimizer& opt = model().trainer().optimizer();
  const double lr = schedule_(epoch, opt.learning_rate());
  OSPREY_CHECK(std::isfinite(lr) && lr >= 0,
               "LearningRateScheduler: the schedule returned an invalid "
               "learning rate {} at epoch {}",
               lr, epoch);
  opt.set_learning_rate(lr);
  if (verbose_ > 0)
    fmt::print("Epoch {}: LearningRateScheduler setting learning rate to {}.\n", epoch + 1, lr);
}

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options) : o_(std::move(options)) {
  OSPREY_CHECK(o_.factor > 0 && o_.factor < 1,
               "ReduceLROnPlateau: factor must be in (0, 1). Received: {}", o_.factor);
  OSPREY_CHECK(o_.mode == "auto" || o_.mode == "min" || o_.mode == "max",
               "ReduceLROnPlateau: mode must be 'auto', 'min' or 'max'. Received: '{}'", o_.mode);
  maximize_ =
      o_.mode == "max" || (o_.mode == "auto" && o_.monitor.find("acc") != std::string::npos);
}

void ReduceLROnPlateau::on_train_begin(const Logs&) {
  wait_ = cooldown_left_ = 0;
  best_ = (maximize_ ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
}

void ReduceLROnPlateau::on_epoch_end(int epoch, const Logs& logs) {
  const std::optional<double> value = logs.get(o_.monitor);
  OSPREY_CHECK(value.has_value(),
               "ReduceLROnPlateau: the monitored value '{}' is not in the logs ({})", o_.monitor,
               logs.format());
  if (cooldown_left_ > 0) {
    --cooldown_left_;
    wait_ = 0;
  }
  const bool better = maximize_ ? *value > best_ + o_.min_delta : *value < best_ - o_.min_delta;
  if (better) {
    best_ = *value;
    wait_ = 0;
    return;
  }
  if (cooldown_left_ > 0) return;
  if (++wait_ >= o_.patience) {
    optim::Optimizer& opt = model().trainer().optimizer();
    const double lr = opt.learning_rate();
    if (lr > o_.min_lr) {
      opt.set_learning_rate(std::max(lr * o_.factor, o_.min_lr));
      cooldown_left_ = o_.cooldown;
      wait_ = 0;
    }
  }
}

}  // namespace osprey::train
