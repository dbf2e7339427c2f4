// Rebuilds layers from their saved config by Keras class name ("Dense", "Conv2D", ...). Built-in
// layers are registered here explicitly (static registration would be dropped by the linker
// from a static library); user layers add themselves with register_layer.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "osprey/nn/layer.h"

namespace osprey::nn {

using LayerFactory = std::function<std::shared_ptr<Layer>(const nlohmann::json& config)>;

void register_layer(const std::string& class_name, LayerFactory factory);
// ValueError naming the class and the registered ones when it is unknown.
std::shared_ptr<Layer> layer_from_config(const std::string& class_name,
                                         const nlohmann::json& config);
// {"class_name": ..., "config": ...} for one layer.
nlohmann::json serialize_layer(const Layer& layer);
// The layer such an entry describes (the inverse of serialize_layer; a missing "config" is {}).
// Any error building it is a ValueError whose message starts with `where`, the entry's place in
// the config that holds it: "layers[2]: unknown layer class 'Dense2'. Registered layers: ...".
std::shared_ptr<Layer> deserialize_layer(const nlohmann::json& entry, const std::string& where);

}  // namespace osprey::nn
