#include "osprey/tune/trial_checkpoint.h"

#include <fmt/format.h>

#include "osprey/core/error.h"
#include "osprey/io/json.h"
#include "osprey/models/saving.h"
#include "osprey/optim/optimizer.h"
#include "osprey/train/trainer.h"

namespace osprey::tune {

namespace {

// A model the build function left unbuilt (no input_shape) is built from the input shape its
// saved config records (Sequential's build_input_shape, batch axis null).
void build_from_config(const std::filesystem::path& dir, Model& model) {
  const std::filesystem::path config_path = dir / "config.json";
  const nlohmann::json config = io::read_json_file(config_path);
  const nlohmann::json* shape = nullptr;
  if (config.contains("model") && config["model"].contains("config")) {
    const auto& c = config["model"]["config"];
    if (c.contains("build_input_shape")) shape = &c["build_input_shape"];
  }
  OSPREY_CHECK_T(IoError, shape != nullptr && shape->is_array(),
                 "{}: the model has no weights yet and the file does not record its input shape "
                 "(model.config.build_input_shape); give the model an input_shape",
                 config_path.string());
  Shape s;
  for (const auto& d : *shape) s.push_back(d.is_null() ? -1 : d.get<int64_t>());
  model.network().build({s});
}

void load_weights_into(const std::filesystem::path& dir, Model& model) {
  OSPREY_CHECK_T(IoError, std::filesystem::exists(dir / "config.json"),
                 "{}: no trial checkpoint (config.json does not exist)", dir.string());
  if (model.variables().empty()) build_from_config(dir, model);
  models::load_weights(model.network(), dir / "model.safetensors");
}

}  // namespace

void save_trial_checkpoint(const std::filesystem::path& dir, const Model& model) {
  model.save(dir.string());
}

void load_trial_weights(const std::filesystem::path& dir, Model& model) {
  load_weights_into(dir, model);
}

void load_trial_checkpoint(const std::filesystem::path& dir, Model& model) {
  load_weights_into(dir, model);
  const std::filesystem::path state_path = dir / "optimizer.safetensors";
  if (!model.compiled() || !std::filesystem::exists(state_path)) return;
  const io::SafetensorsFile state = io::load_safetensors(state_path);
  if (state.tensors.empty()) return;
  try {
    model.trainer().optimizer().load_state(state.tensors);
  } catch (const ValueError& e) {
    OSPREY_THROW(IoError, "{}: the optimizer state does not fit this model's optimizer: {}",
                 state_path.string(), e.what());
  }
}

}  // namespace osprey::tune
