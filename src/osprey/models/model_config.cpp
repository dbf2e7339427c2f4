#include "osprey/models/model_config.h"

#include "osprey/core/error.h"
#include "osprey/io/json.h"
#include "osprey/io/toml.h"
#include "osprey/models/keras_config.h"
#include "osprey/nn/layer_registry.h"

namespace osprey::models {

std::shared_ptr<Network> model_from_config(const nlohmann::json& description,
                                           const std::string& source) {
  register_model_classes();
  const bool saved = description.is_object() && description.contains("model");
  const nlohmann::json& m = saved ? description["model"] : description;
  OSPREY_CHECK(m.is_object() && m.contains("class_name"),
               "{}: no model described: expected a \"model\" field (config.json as Model::save "
               "writes it) or a \"class_name\" and a \"config\" (the model alone)",
               source);
  const std::string field = saved ? "model." : "";
  OSPREY_CHECK(m["class_name"].is_string(), "{}: {}class_name: must be a string. Received: {}",
               source, field, m["class_name"].dump());
  std::shared_ptr<nn::Layer> layer;
  try {
    // What Keras writes (keras_config.h) as osprey's own description; osprey's stays as it is.
    const nlohmann::json model = from_keras_config(m, field);
    nlohmann::json config = model.value("config", nlohmann::json::object());
    if (config.is_null()) config = nlohmann::json::object();
    // A model's own errors name the field inside its config ("layers[2]: ...").
    layer = nn::layer_from_config(model["class_name"].get<std::string>(), config);
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: {}config: {}", source, field, io::json_exception_message(e));
  } catch (const ValueError& e) {
    OSPREY_THROW(ValueError, "{}: {}", source, e.what());
  }
  auto network = std::dynamic_pointer_cast<Network>(layer);
  OSPREY_CHECK(network != nullptr,
               "{}: {}class_name: '{}' is a layer, not a model (Sequential or Functional)", source,
               field, layer->class_name());
  return network;
}

std::shared_ptr<Network> model_from_file(const std::filesystem::path& path) {
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(path)) {
    file = path / "config.json";
    OSPREY_CHECK_T(IoError, std::filesystem::exists(file),
                   "{}: a directory, but not one Model::save wrote (config.json does not exist)",
                   path.string());
  }
  const nlohmann::json description =
      file.extension() == ".toml" ? io::read_toml_file(file) : io::read_json_file(file);
  return model_from_config(description, file.string());
}

}  // namespace osprey::models
