// Optimizers by name and by config: Keras's keras.optimizers.get / serialize / deserialize, so
// `model.compile("adam", ...)`, a tuner's Choice("optimizer", {"rmsprop", "adam"}) and a saved
// model's config all build the same objects.
//   auto opt = optim::get("rmsprop");                       // RMSprop, learning_rate 0.001
//   nlohmann::json j = optim::serialize(*opt);              // {"class_name": "RMSprop", "config":
//   {...}} auto again = optim::deserialize(j);
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "osprey/optim/optimizer.h"

namespace osprey::optim {

// "sgd", "adam", "adamw", "rmsprop" (any case), with Keras's defaults (learning_rate 0.01 for
// SGD, 0.001 for the others). Throws ValueError naming the valid names otherwise.
std::unique_ptr<Optimizer> get(std::string_view name);

// {"class_name": optimizer.class_name(), "config": optimizer.get_config()}.
nlohmann::json serialize(const Optimizer& optimizer);
// Inverse of serialize(); class_name may be any spelling get() accepts. Keras's extra
// "module"/"registered_name" keys are ignored.
std::unique_ptr<Optimizer> deserialize(const nlohmann::json& serialized);

}  // namespace osprey::optim
