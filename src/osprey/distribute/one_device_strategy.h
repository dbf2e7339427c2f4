// OneDevice: every step on one device (tf.distribute.OneDeviceStrategy): the single-device path
// of the trainer, under a strategy's name and scope, so code written for a strategy runs the same
// with one device.
//   os::distribute::OneDevice strategy("cpu:0");
#pragma once

#include <string>

#include "osprey/distribute/strategy_base.h"

namespace osprey::distribute {

class OneDevice final : public StrategyBase {
 public:
  explicit OneDevice(const std::string& device = "cpu:0");
  std::string name() const override { return "OneDevice"; }
  std::unique_ptr<train::StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override;
  std::shared_ptr<const train::Strategy> clone() const override {
    return std::make_shared<OneDevice>(*this);
  }
};

}  // namespace osprey::distribute
