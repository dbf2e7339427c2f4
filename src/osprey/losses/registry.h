// Losses by name, as model.compile(optimizer, "sparse_categorical_crossentropy") spells them, and
// back from a saved config (class_name plus get_config()).
//   std::unique_ptr<losses::Loss> loss = losses::get("mse");        // MeanSquaredError
//   auto same = losses::from_config(loss->class_name(), loss->get_config());
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/losses/binary_crossentropy.h"
#include "osprey/losses/crossentropy.h"
#include "osprey/losses/regression.h"

namespace osprey::losses {

// "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy",
// "mean_squared_error" / "mse", "mean_absolute_error" / "mae", "huber" / "huber_loss", with
// default options. Unknown names throw ValueError listing the valid ones.
std::unique_ptr<Loss> get(std::string_view name);
// The names get() accepts, in the order the error message lists them.
const std::vector<std::string>& loss_names();
// Rebuilds a loss from its Keras class name ("Huber") and config ({"delta": 2.0, ...}); missing
// fields take their defaults. Throws ValueError for an unknown class or a malformed field.
std::unique_ptr<Loss> from_config(std::string_view class_name, const nlohmann::json& config);

}  // namespace osprey::losses
