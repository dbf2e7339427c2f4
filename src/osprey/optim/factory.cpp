#include "osprey/optim/factory.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "osprey/core/error.h"
#include "osprey/optim/adam.h"
#include "osprey/optim/config_reader.h"
#include "osprey/optim/loss_scale_optimizer.h"
#include "osprey/optim/rmsprop.h"
#include "osprey/optim/sgd.h"

namespace osprey::optim {

namespace {

constexpr const char* kValidNames = "sgd, adam, adamw, rmsprop";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Builds from a config; an empty config gives the defaults.
std::unique_ptr<Optimizer> build(std::string_view name, const nlohmann::json& config) {
  const std::string key = lower(name);
  if (key == "sgd") return std::make_unique<SGD>(SGD::from_config(config));
  if (key == "adam") return std::make_unique<Adam>(Adam::from_config(config));
  if (key == "adamw") return std::make_unique<AdamW>(AdamW::from_config(config));
  if (key == "rmsprop") return std::make_unique<RMSprop>(RMSprop::from_config(config));
  // Only from a config: it needs the optimizer it wraps ("inner_optimizer").
  if (key == "lossscaleoptimizer" && !config.empty()) {
    return std::make_unique<LossScaleOptimizer>(LossScaleOptimizer::from_config(config));
  }
  OSPREY_THROW(ValueError, "Unknown optimizer: \"{}\". Valid names: {}", name, kValidNames);
}

}  // namespace

std::unique_ptr<Optimizer> get(std::string_view name) {
  return build(name, nlohmann::json::object());
}

nlohmann::json serialize(const Optimizer& optimizer) {
  return {{"class_name", optimizer.class_name()}, {"config", optimizer.get_config()}};
}

std::unique_ptr<Optimizer> deserialize(const nlohmann::json& serialized) {
  detail::ConfigReader r(serialized, "optim::deserialize");
  const std::string cls = r.string("class_name", "");
  const nlohmann::json* config = r.raw("config");
  OSPREY_CHECK(config != nullptr,
               "optim::deserialize: the \"config\" field is missing. Received: {}",
               serialized.dump());
  r.raw("module");
  r.raw("registered_name");
  r.finish();
  return build(cls, *config);
}

}  // namespace osprey::optim
