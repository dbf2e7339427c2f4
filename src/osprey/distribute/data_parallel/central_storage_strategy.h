// CentralStorageStrategy: the variables live once, on the host (tf.distribute's
// CentralStorageStrategy). Replicas read them at the start of every step, run forward and
// backward on their share of the global batch on their own worker threads, and their gradients
// are reduced to the host (summed in replica order, divided by the replica count) and applied
// there once, by the one compiled optimizer; non-trainable state (BatchNormalization's moving
// statistics) is averaged to the host the same way. Its updates equal MirroredStrategy's bitwise.
//   os::distribute::CentralStorageStrategy strategy({"cpu:0", "cpu:1"});
#pragma once

#include <string>
#include <vector>

#include "osprey/distribute/strategy_base.h"

namespace osprey::distribute {

class CentralStorageStrategy final : public StrategyBase {
 public:
  explicit CentralStorageStrategy(const std::vector<std::string>& devices = {});
  std::string name() const override { return "CentralStorageStrategy"; }
  std::unique_ptr<train::StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override;
  std::shared_ptr<const train::Strategy> clone() const override {
    return std::make_shared<CentralStorageStrategy>(*this);
  }
};

}  // namespace osprey::distribute
