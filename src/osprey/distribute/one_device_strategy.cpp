#include "osprey/distribute/one_device_strategy.h"

#include "osprey/distribute/devices.h"

namespace osprey::distribute {

OneDevice::OneDevice(const std::string& device)
    : StrategyBase(resolve_devices({device}, "OneDevice")) {}

std::unique_ptr<train::StepExecutor> OneDevice::make_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer) const {
  return train::single_device_strategy()->make_executor(std::move(network), std::move(optimizer));
}

}  // namespace osprey::distribute
