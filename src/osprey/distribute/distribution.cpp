#include "osprey/distribute/distribution.h"

#include <fmt/format.h>

#include "osprey/core/error.h"

namespace osprey::distribution {

std::vector<std::string> list_devices(const std::string& device_type) {
  OSPREY_CHECK(
      device_type.empty() || device_type == "cpu",
      "list_devices: device_type must be \"cpu\" (or empty) in this build. Received: \"{}\"",
      device_type);
  std::vector<std::string> out;
  for (const Device& d : osprey::list_devices()) out.push_back(d.to_string());
  return out;
}

DataParallel::DataParallel(const std::vector<std::string>& devices) : strategy_(devices) {}

void set_distribution(const std::optional<DataParallel>& distribution) {
  train::set_global_strategy(distribution ? distribution->strategy().clone() : nullptr);
}

void set_distribution(const ModelParallel& distribution) {
  train::set_global_strategy(distribution.clone());
}

std::shared_ptr<const train::Strategy> distribution() { return train::global_strategy(); }

std::string sharding(const autograd::Variable& variable) {
  const auto* mp = dynamic_cast<const ModelParallel*>(train::global_strategy().get());
  if (mp != nullptr) return mp->sharding(variable);
  return fmt::format("{} {} replicated (no ModelParallel distribution is set)\n", variable.name(),
                     variable.shape().to_string());
}

}  // namespace osprey::distribution
