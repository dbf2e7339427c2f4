// StrategyBase: what OneDevice, MirroredStrategy and CentralStorageStrategy share: the device
// list, num_replicas_in_sync() and scope(). A strategy is an immutable description (copies are
// equivalent); the per-model state (replicas, optimizers, communicator) lives in the executor
// train::Strategy::make_executor builds for each compiled model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "osprey/core/device.h"
#include "osprey/distribute/strategy_scope.h"
#include "osprey/train/strategy.h"

namespace osprey::distribute {

class StrategyBase : public train::Strategy {
 public:
  int num_replicas_in_sync() const override { return static_cast<int>(devices_.size()); }
  std::string describe() const override {
    std::string s = name() + "(";
    for (size_t i = 0; i < devices_.size(); ++i) s += (i > 0 ? ", " : "") + devices_[i].to_string();
    return s + ")";
  }
  const std::vector<Device>& devices() const noexcept { return devices_; }
  // Makes this strategy current on this thread until the guard is destroyed.
  StrategyScope scope() const { return StrategyScope(clone()); }
  virtual std::shared_ptr<const train::Strategy> clone() const = 0;

 protected:
  explicit StrategyBase(std::vector<Device> devices) : devices_(std::move(devices)) {}
  std::vector<Device> devices_;
};

}  // namespace osprey::distribute
