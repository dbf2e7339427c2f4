#include "osprey/nn/layer_registry.h"

#include <map>
#include <mutex>

#include "osprey/io/json.h"
#include "osprey/nn/layers/all.h"

namespace osprey::nn {

namespace {
struct Registry {
  std::mutex mutex;
  std::map<std::string, LayerFactory> factories;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();
    for (const auto& [name, factory] : builtin_layer_factories()) reg->factories[name] = factory;
    return reg;
  }();
  return *r;
}
}  // namespace

void register_layer(const std::string& class_name, LayerFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[class_name] = std::move(factory);
}

std::shared_ptr<Layer> layer_from_config(const std::string& class_name,
                                         const nlohmann::json& config) {
  Registry& r = registry();
  LayerFactory f;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.factories.find(class_name);
    if (it == r.factories.end()) {
      std::string known;
      for (const auto& [k, v] : r.factories) known += (known.empty() ? "" : ", ") + k;
      OSPREY_THROW(ValueError, "unknown layer class '{}'. Registered layers: {}", class_name,
                   known);
    }
    f = it->second;
  }
  // Layers read integer fields with plain casts, undefined for floats past their range and for
  // negative floats read as unsigned (seeds): checked here, for every layer, before any is read.
  io::check_float_magnitudes(config, io::kIntFieldBound, fmt::format("{} config", class_name));
  OSPREY_CHECK(!config.is_object() || !config.contains("seed") || config["seed"].is_null() ||
                   config["seed"].is_number_unsigned(),
               "{} config: seed must be a non-negative integer or null. Received: {}", class_name,
               config["seed"].dump());
  return f(config);
}

nlohmann::json serialize_layer(const Layer& layer) {
  return {{"class_name", layer.class_name()}, {"config", layer.get_config()}};
}

std::shared_ptr<Layer> deserialize_layer(const nlohmann::json& entry, const std::string& where) {
  OSPREY_CHECK(entry.is_object() && entry.contains("class_name") && entry["class_name"].is_string(),
               "{}: expected {{\"class_name\": ..., \"config\": {{...}}}}. Received: {}", where,
               entry.dump());
  const std::string class_name = entry["class_name"].get<std::string>();
  nlohmann::json config = entry.value("config", nlohmann::json::object());
  if (config.is_null()) config = nlohmann::json::object();
  OSPREY_CHECK(config.is_object(), "{}.config: must be an object. Received: {}", where,
               config.dump());
  try {
    return layer_from_config(class_name, config);
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{} ({}): {}", where, class_name, io::json_exception_message(e));
  } catch (const ValueError& e) {
    OSPREY_THROW(ValueError, "{}: {}", where, e.what());
  }
}

}  // namespace osprey::nn
