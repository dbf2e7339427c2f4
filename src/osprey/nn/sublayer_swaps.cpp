#include "osprey/nn/sublayer_swaps.h"

#include "osprey/nn/layer_registry.h"

namespace osprey::nn {

void SublayerSwaps::read(const nlohmann::json& config, const std::string& owner) {
  if (!config.contains(kConfigKey) || config[kConfigKey].is_null()) return;
  const nlohmann::json& e = config[kConfigKey];
  OSPREY_CHECK(e.is_object(),
               "{}: {} must be an object of layer entries by sublayer name. Received: {}", owner,
               kConfigKey, e.dump());
  entries_ = e;
}

std::shared_ptr<Layer> SublayerSwaps::from_entry(const std::string& name,
                                                 const std::string& owner) {
  if (!entries_.contains(name)) return nullptr;
  std::shared_ptr<Layer> layer =
      deserialize_layer(entries_[name], fmt::format("{}.{}.{}", owner, kConfigKey, name));
  OSPREY_CHECK(layer->name() == name, "{}: the swapped sublayer '{}' is named '{}'", owner, name,
               layer->name());
  swapped_.insert(name);
  return layer;
}

void SublayerSwaps::write(nlohmann::json& config,
                          const std::vector<std::shared_ptr<Layer>>& sublayers) const {
  nlohmann::json out = nlohmann::json::object();
  if (sublayers.empty()) {
    out = entries_;
  } else {
    for (const auto& l : sublayers) {
      nlohmann::json entry = serialize_layer(*l);
      if (swapped_.contains(l->name()) || entry["config"].contains(kConfigKey))
        out[l->name()] = std::move(entry);
    }
  }
  if (!out.empty()) config[kConfigKey] = std::move(out);
}

}  // namespace osprey::nn
