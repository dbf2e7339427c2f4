#include "osprey/models/keras_config.h"

#include <fmt/format.h>

#include "osprey/core/dtype.h"
#include "osprey/core/error.h"

namespace osprey::models {

namespace {

// How errors name one entry of the description and its fields: the model itself by `prefix`
// ("", "model."; fields "config.dtype"), a layer by its place and class ("layers[1] (Dense)";
// fields "layers[1] (Dense): kernel_constraint").
struct Place {
  std::string prefix;  // the model's: "" or "model."; a layer's: "layers[1] (Dense)"
  bool is_model_root = false;

  std::string field(const std::string& key) const {
    return is_model_root ? fmt::format("{}config.{}", prefix, key)
                         : fmt::format("{}: {}", prefix, key);
  }
  Place layer(size_t i, const std::string& class_name) const {
    const std::string at = fmt::format("layers[{}] ({})", i, class_name);
    return {is_model_root ? at : fmt::format("{}: {}", prefix, at), false};
  }
};

// Keras's DTypePolicy object as the policy name osprey's layers read; a string stays as it is.
// Keras 3.0-3.3 called the float policy FloatDTypePolicy. The quantized policies (int8, float8
// weights) and DTypePolicyMap have no osprey layer config: osprey quantizes a trained model.
nlohmann::json dtype_policy_name(const nlohmann::json& dtype, const std::string& field) {
  if (!dtype.is_object()) return dtype;
  const std::string cls = dtype.contains("class_name") && dtype["class_name"].is_string()
                              ? dtype["class_name"].get<std::string>()
                              : std::string();
  OSPREY_CHECK(cls == "DTypePolicy" || cls == "FloatDTypePolicy",
               "{}: {} cannot be read: osprey reads the float policies (DTypePolicy, e.g. "
               "float32 or mixed_float16) and quantizes a trained model (osprey quantize). "
               "Received: {}",
               field, cls.empty() ? "a dtype object without a class_name" : "Keras's " + cls,
               dtype.dump());
  const nlohmann::json config = dtype.value("config", nlohmann::json::object());
  OSPREY_CHECK(config.is_object() && config.contains("name") && config["name"].is_string(),
               "{}: a DTypePolicy names its policy in config.name. Received: {}", field,
               dtype.dump());
  return config["name"];
}

// Layer settings that Keras writes as null when unused and osprey cannot honour otherwise.
void check_unsupported(const nlohmann::json& config, const Place& at) {
  for (const auto& [key, value] : config.items()) {
    if (value.is_null()) continue;
    const char* why = nullptr;
    if (key.ends_with("_constraint")) why = "osprey has no weight constraints";
    if (key == "activity_regularizer") why = "osprey has no activity regularizers";
    if (key == "quantization_config")
      why = "osprey quantizes a trained model (osprey quantize), not a layer config";
    if (key == "lora_rank") why = "osprey has no LoRA layers";
    OSPREY_CHECK(why == nullptr, "{}: {}. Received: {}", at.field(key), why, value.dump());
  }
}

bool is_input_layer(const nlohmann::json& entry) {
  return entry.is_object() && entry.value("class_name", nlohmann::json()) == "InputLayer";
}

// An input shape as Keras writes it: null or a positive size per axis.
nlohmann::json checked_shape(const nlohmann::json& shape, const std::string& field) {
  bool ok = shape.is_array() && !shape.empty();
  for (const auto& d : shape)
    ok = ok && (d.is_null() || (d.is_number_integer() && d.get<int64_t>() > 0));
  OSPREY_CHECK(ok, "{}: must be a list of positive sizes or null. Received: {}", field,
               shape.dump());
  return shape;
}

// A Sequential's InputLayer (its first layer, as Keras 3 writes it) gives its build_input_shape.
// The entry stays, so later errors name each layer by its place in the file; Sequential's
// from_config passes over it (osprey's Sequential has no input layer).
void input_layer_to_build_input_shape(nlohmann::json& config, const Place& at) {
  nlohmann::json& layers = config["layers"];
  for (size_t i = 1; i < layers.size(); ++i) {
    OSPREY_CHECK(!is_input_layer(layers[i]),
                 "{}: only a Sequential's first layer may be an InputLayer (it gives the "
                 "model's input shape)",
                 at.layer(i, "InputLayer").prefix);
  }
  if (layers.empty() || !is_input_layer(layers[0])) return;
  const Place input = at.layer(0, "InputLayer");
  const nlohmann::json c = layers[0].value("config", nlohmann::json::object());
  OSPREY_CHECK(c.is_object(), "{}: must be an object. Received: {}", input.field("config"),
               c.dump());
  for (const char* flag : {"sparse", "ragged", "optional"}) {
    const nlohmann::json v = c.value(flag, nlohmann::json(false));
    OSPREY_CHECK(v.is_null() || v == false, "{}: osprey has no {} inputs. Received: {}",
                 input.field(flag), flag, v.dump());
  }
  // Keras 3 writes batch_shape, Keras 2 batch_input_shape; both include the batch axis.
  // input_shape (and Keras 3's constructor argument shape) leave it out.
  nlohmann::json batch_shape;
  int given = 0;
  for (const char* key : {"batch_shape", "batch_input_shape", "input_shape", "shape"}) {
    if (!c.contains(key) || c[key].is_null()) continue;
    ++given;
    const bool has_batch = std::string(key).starts_with("batch");
    batch_shape = checked_shape(c[key], input.field(key));
    if (!has_batch) batch_shape.insert(batch_shape.begin(), nullptr);
  }
  OSPREY_CHECK(given == 1,
               "{}: expected one of batch_shape, batch_input_shape, input_shape or shape. "
               "Received: {}",
               input.prefix, c.dump());
  if (c.contains("dtype") && c["dtype"].is_string()) {
    try {
      parse_dtype(c["dtype"].get<std::string>());
    } catch (const ValueError& e) {
      OSPREY_THROW(ValueError, "{}: {}", input.field("dtype"), e.what());
    }
  }
  if (config.contains("build_input_shape") && !config["build_input_shape"].is_null()) {
    OSPREY_CHECK(config["build_input_shape"] == batch_shape,
                 "{}: {} disagrees with the InputLayer's shape {}", at.field("build_input_shape"),
                 config["build_input_shape"].dump(), batch_shape.dump());
  }
  config["build_input_shape"] = batch_shape;
}

std::string class_name_of(const nlohmann::json& entry) {
  const nlohmann::json cls = entry.value("class_name", nlohmann::json());
  return cls.is_string() ? cls.get<std::string>() : cls.dump();
}

// A Keras tensor in a Keras 3 call ({"class_name": "__keras_tensor__", "config": {"shape": ...,
// "keras_history": [layer, node, tensor]}}) as the reference osprey's configs use.
nlohmann::json tensor_reference(const nlohmann::json& x, const std::string& field) {
  const bool ok =
      x.is_object() && x.value("class_name", nlohmann::json()) == "__keras_tensor__" &&
      x.contains("config") && x["config"].is_object() && x["config"].contains("keras_history") &&
      x["config"]["keras_history"].is_array() && x["config"]["keras_history"].size() == 3;
  OSPREY_CHECK(ok,
               "{}: osprey reads Keras tensors here ({{\"class_name\": \"__keras_tensor__\", "
               "\"config\": {{\"keras_history\": [layer, node, tensor]}}}}). Received: {}",
               field, x.dump());
  return x["config"]["keras_history"];
}

// Keras 3 writes a functional model's calls as {"args": [...], "kwargs": {...}} on Keras
// tensors; osprey reads Keras 2's layout, which its own configs keep: a list of references
// [layer, node, tensor], the call's keyword tensors as a fourth element of the first. The
// positional input is one tensor or a list of them (Concatenate, Add); the keyword tensors read
// are initial_state (recurrent layers); null keywords (mask=None) are Keras's defaults, and
// training (Keras records training=False on a recurrent call) is osprey's to choose at run time.
nlohmann::json legacy_call(const nlohmann::json& node, const std::string& field) {
  const nlohmann::json args = node.value("args", nlohmann::json::array());
  const nlohmann::json kwargs = node.value("kwargs", nlohmann::json::object());
  OSPREY_CHECK(args.is_array() && args.size() == 1 && kwargs.is_object(),
               "{}: a call reads one positional input (a tensor or a list of tensors) and "
               "keyword tensors. Received: {}",
               field, node.dump());
  nlohmann::json refs = nlohmann::json::array();
  const nlohmann::json& input = args[0];
  for (const auto& x : input.is_array() ? input : nlohmann::json::array({input}))
    refs.push_back(tensor_reference(x, field + ".args"));
  nlohmann::json keywords = nlohmann::json::object();
  for (const auto& [key, value] : kwargs.items()) {
    if (value.is_null() || (key == "training" && value.is_boolean())) continue;
    OSPREY_CHECK(key == "initial_state",
                 "{}.kwargs.{}: osprey's layers take initial_state as a keyword tensor and no "
                 "other. Received: {}",
                 field, key, value.dump());
    nlohmann::json states = nlohmann::json::array();
    for (const auto& x : value.is_array() ? value : nlohmann::json::array({value}))
      states.push_back(tensor_reference(x, field + ".kwargs.initial_state"));
    keywords[key] = states;
  }
  if (!keywords.empty()) refs[0].push_back(keywords);
  return refs;
}

void functional_calls_to_legacy(nlohmann::json& config, const Place& at) {
  for (size_t i = 0; i < config["layers"].size(); ++i) {
    nlohmann::json& l = config["layers"][i];
    if (!l.is_object() || !l.contains("inbound_nodes") || !l["inbound_nodes"].is_array()) continue;
    const std::string field = at.layer(i, class_name_of(l)).field("inbound_nodes");
    for (size_t k = 0; k < l["inbound_nodes"].size(); ++k) {
      nlohmann::json& node = l["inbound_nodes"][k];
      if (node.is_object()) node = legacy_call(node, fmt::format("{}[{}]", field, k));
    }
  }
}

nlohmann::json entry_from_keras(const nlohmann::json& entry, const Place& at) {
  if (!entry.is_object() || !entry.contains("class_name") || !entry["class_name"].is_string())
    return entry;  // deserialize_layer and model_from_config say what is wrong
  nlohmann::json out = entry;
  const std::string cls = entry["class_name"].get<std::string>();
  // module names the Python package, registered_name a custom object's registration: osprey
  // finds a class by class_name alone (nn::register_layer). build_config repeats, per layer, the
  // input shape the model is built with.
  const nlohmann::json build_config = out.value("build_config", nlohmann::json());
  for (const char* key : {"module", "registered_name", "build_config"}) out.erase(key);
  if (!out.contains("config") || !out["config"].is_object()) return out;
  nlohmann::json& c = out["config"];
  if (c.contains("dtype")) c["dtype"] = dtype_policy_name(c["dtype"], at.field("dtype"));
  check_unsupported(c, at);
  if (!c.contains("layers") || !c["layers"].is_array()) return out;
  for (size_t i = 0; i < c["layers"].size(); ++i) {
    nlohmann::json& l = c["layers"][i];
    if (l.is_object() && l.contains("class_name") && l["class_name"].is_string())
      l = entry_from_keras(l, at.layer(i, l["class_name"].get<std::string>()));
  }
  if (cls == "Functional") functional_calls_to_legacy(c, at);
  if (cls != "Sequential") return out;
  input_layer_to_build_input_shape(c, at);
  // A Sequential without an InputLayer that Keras built still records its input shape.
  if (!c.contains("build_input_shape") && build_config.is_object() &&
      build_config.contains("input_shape") && !build_config["input_shape"].is_null()) {
    c["build_input_shape"] = checked_shape(
        build_config["input_shape"], at.is_model_root ? at.prefix + "build_config.input_shape"
                                                      : at.prefix + ": build_config.input_shape");
  }
  return out;
}

}  // namespace

nlohmann::json from_keras_config(const nlohmann::json& model, const std::string& where) {
  return entry_from_keras(model, {where, true});
}

}  // namespace osprey::models
