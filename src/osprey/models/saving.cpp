#include "osprey/models/saving.h"

#include <set>

#include "osprey/io/atomic_directory.h"
#include "osprey/io/json.h"
#include "osprey/nn/build_limits.h"
#include "osprey/nn/layer_registry.h"

namespace osprey::models {

void save_model(const Network& model, const std::filesystem::path& dir, const SaveExtras& extras) {
  OSPREY_CHECK(model.built(),
               "save_model: {} is not built yet; call it on data (or build it) first",
               model.name());
  nlohmann::json config = extras.config;
  config["format"] = "osprey.model";
  config["format_version"] = 1;
  config["model"] = nn::serialize_layer(model);
  io::NamedTensors weights;
  for (const autograd::Variable& v : model.variables()) weights.emplace_back(v.name(), v.value());
  // Like Keras, a save into a folder that does not exist yet creates it (the save itself stays
  // atomic: only the final directory is swapped in).
  const std::filesystem::path parent = std::filesystem::absolute(dir).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  OSPREY_CHECK_T(IoError, !ec, "save_model: cannot create {}: {}", parent.string(), ec.message());
  io::atomic_write_directory(dir, [&](const std::filesystem::path& staging) {
    io::write_json_file(staging / "config.json", config);
    io::save_safetensors(staging / "model.safetensors", weights, {{"format", "pt"}});
    for (const auto& [name, tensors] : extras.files) io::save_safetensors(staging / name, tensors);
    for (const auto& [name, json] : extras.json_files) io::write_json_file(staging / name, json);
  });
}

LoadedModel load_model(const std::filesystem::path& dir) {
  register_model_classes();
  const std::filesystem::path config_path = dir / "config.json";
  OSPREY_CHECK_T(IoError, std::filesystem::exists(config_path),
                 "load_model: {} does not exist (expected a "
                 "directory written by save())",
                 config_path.string());
  LoadedModel out;
  out.dir = dir;
  out.config = io::read_json_file(config_path);
  OSPREY_CHECK_T(IoError,
                 out.config.contains("model") && out.config["model"].contains("class_name"),
                 "{}: field \"model\" with a \"class_name\" is missing", config_path.string());
  const auto& m = out.config["model"];
  // The weights file's header first (no data is read): every weight the config builds is checked
  // against it before it is allocated, so a config that does not fit its weights is refused
  // before a byte of the model exists.
  const std::filesystem::path weights_path = dir / "model.safetensors";
  nn::BuildLimits limits;
  limits.source = weights_path.string();
  limits.expected.emplace();
  for (const io::SafetensorsTensorInfo& t : io::read_safetensors_header(weights_path).tensors)
    limits.expected->emplace(t.name, nn::ExpectedWeight{t.dtype, t.shape});
  std::shared_ptr<nn::Layer> layer;
  {
    nn::BuildLimitsScope scope(std::move(limits));
    layer = nn::layer_from_config(m["class_name"].get<std::string>(), m.at("config"));
  }
  out.model = std::dynamic_pointer_cast<Network>(layer);
  OSPREY_CHECK_T(IoError, out.model != nullptr, "{}: \"model\" is a {}, not a model",
                 config_path.string(), m["class_name"].get<std::string>());
  load_weights(*out.model, weights_path);
  return out;
}

void load_weights(Network& model, const std::filesystem::path& weights_path) {
  const io::SafetensorsFile file = io::load_safetensors(weights_path);
  const std::vector<autograd::Variable> variables = model.variables();
  // Every tensor is checked before any weight changes, so a file that does not fit leaves the
  // model as it was.
  std::set<std::string_view> names;
  for (const autograd::Variable& v : variables) {
    const Tensor* t = file.find(v.name());
    OSPREY_CHECK_T(IoError, t != nullptr, "{}: weight \"{}\" is missing", weights_path.string(),
                   v.name());
    OSPREY_CHECK_T(IoError, t->shape() == v.shape(),
                   "{}: weight \"{}\" has shape {}, the model expects {}", weights_path.string(),
                   v.name(), t->shape().to_string(), v.shape().to_string());
    // A same-sized dtype (I32 for F32) would otherwise be converted value by value into garbage.
    OSPREY_CHECK_T(IoError, t->dtype() == v.dtype(),
                   "{}: weight \"{}\" has dtype {}, the model expects {}", weights_path.string(),
                   v.name(), dtype_name(t->dtype()), dtype_name(v.dtype()));
    names.insert(v.name());
  }
  for (const auto& [name, tensor] : file.tensors) {
    OSPREY_CHECK_T(IoError, names.contains(name),
                   "{}: holds \"{}\", which the model has no weight for ({} weights expected)",
                   weights_path.string(), name, variables.size());
  }
  for (const autograd::Variable& v : variables) {
    Tensor dst = v.value();
    dst.copy_(*file.find(v.name()));
    autograd::Variable(v).mark_modified();  // caches derived from the value are stale now
  }
}

}  // namespace osprey::models
