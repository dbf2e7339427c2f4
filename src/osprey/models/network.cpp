#include "osprey/models/network.h"

#include <fmt/format.h>

#include <algorithm>

#include "osprey/models/gpt.h"
#include "osprey/nn/layer_registry.h"

namespace osprey::models {

std::shared_ptr<nn::Layer> Network::get_layer(const std::string& name) const {
  std::string known;
  for (const auto& l : layers()) {
    if (l->name() == name) return l;
    known += (known.empty() ? "" : ", ") + l->name();
  }
  OSPREY_THROW(ValueError, "{}: no layer named '{}'. Layers: {}", this->name(), name, known);
}

void Network::set_path_prefix(const std::string& prefix) {
  nn::Layer::set_path_prefix(prefix);
  for (const auto& l : layers()) l->set_path_prefix(path());
}

void Network::replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) {
  get_layer(name);  // the ValueError for an unknown name
  OSPREY_THROW(NotImplementedError, "{}: a {} model cannot replace its layers yet (layer '{}')",
               this->name(), class_name(), name);
}

std::shared_ptr<nn::Layer> Network::adopt_replacement(const std::string& name,
                                                      const std::shared_ptr<nn::Layer>& layer) {
  OSPREY_CHECK(layer != nullptr, "{}: replace_sublayer('{}') received a null layer", this->name(),
               name);
  std::shared_ptr<nn::Layer> old = get_layer(name);  // the ValueError listing the layers
  OSPREY_CHECK(layer->name() == name,
               "{}: the layer replacing '{}' must keep its name. Received: '{}'", this->name(),
               name, layer->name());
  adopt(layer);
  return old;
}

void Network::adopt(const std::shared_ptr<nn::Layer>& layer) {
  OSPREY_CHECK(layer != nullptr, "{}: cannot add a null layer", name());
  OSPREY_CHECK(layer.get() != this, "{}: a model cannot contain itself", name());
  layer->set_path_prefix(path());
}

Variable Network::call(const std::vector<Variable>& inputs, bool training) {
  std::vector<Variable> out = call_all(inputs, training);
  OSPREY_CHECK(out.size() == 1, "{}: the model has {} outputs; use call_all()", name(), out.size());
  return out[0];
}

std::vector<Variable> Network::call_with_args(const std::vector<Variable>& inputs,
                                              const nn::CallArgs<Variable>& args, bool training) {
  check_no_call_args(args.initial_state.size());
  return call_all(inputs, training);
}

namespace {
std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (int i = 0; i < s.ndim(); ++i) {
    if (i) out += ", ";
    out += s[i] < 0 ? "None" : std::to_string(s[i]);
  }
  return out + (s.ndim() == 1 ? ",)" : ")");
}
std::string bytes_text(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{:.2f} B", static_cast<double>(bytes));
  if (bytes < 1024 * 1024) return fmt::format("{:.2f} KB", bytes / 1024.0);
  if (bytes < int64_t{1} << 30) return fmt::format("{:.2f} MB", bytes / 1048576.0);
  return fmt::format("{:.2f} GB", bytes / 1073741824.0);
}
}  // namespace

std::string Network::summary() const {
  const std::string rule(65, '_'), thick(65, '=');
  std::string out = fmt::format("Model: \"{}\"\n{}\n {:<28}{:<26}{:<9}\n{}\n", name(), rule,
                                "Layer (type)", "Output Shape", "Param #", thick);
  const std::vector<LayerRow> rows = summary_rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    const LayerRow& r = rows[i];
    out +=
        fmt::format(" {:<28}{:<26}{:<9}\n", fmt::format("{} ({})", r.name, r.class_name),
                    built() || r.output_shape.ndim() ? shape_text(r.output_shape) : "?", r.params);
    if (i + 1 < rows.size()) out += "\n";
  }
  int64_t total = 0, trainable = 0, total_bytes = 0, trainable_bytes = 0;
  for (const Variable& v : variables()) {
    total += v.numel();
    total_bytes += static_cast<int64_t>(v.value().nbytes());
  }
  for (const Variable& v : trainable_variables()) {
    trainable += v.numel();
    trainable_bytes += static_cast<int64_t>(v.value().nbytes());
  }
  out += fmt::format(
      "{}\nTotal params: {} ({})\nTrainable params: {} ({})\nNon-trainable params: {} ({})\n{}\n",
      thick, total, bytes_text(total_bytes), trainable, bytes_text(trainable_bytes),
      total - trainable, bytes_text(total_bytes - trainable_bytes), rule);
  return out;
}

std::vector<Tensor> Network::get_weights() const {
  std::vector<Tensor> out;
  for (const Variable& v : variables()) out.push_back(v.value().clone());
  return out;
}

void Network::set_weights(const std::vector<Tensor>& weights) {
  const std::vector<Variable> vars = variables();
  OSPREY_CHECK(weights.size() == vars.size(), "{}: set_weights expected {} arrays, received {}",
               name(), vars.size(), weights.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    OSPREY_CHECK(weights[i].shape() == vars[i].shape(),
                 "{}: set_weights: weight {} ({}) has shape {}, received {}", name(), i,
                 vars[i].name(), vars[i].shape().to_string(), weights[i].shape().to_string());
  }
  // Copy in place: the optimizer and any views keep referring to the same storage.
  for (size_t i = 0; i < vars.size(); ++i) {
    Tensor dst = vars[i].value();
    dst.copy_(weights[i]);
    Variable(vars[i]).mark_modified();  // caches derived from the value are stale now
  }
}

Sequential::Sequential(std::vector<std::shared_ptr<nn::Layer>> layers, SequentialOptions options)
    : Network("Sequential", {options.name, options.dtype, options.trainable}) {
  for (auto& l : layers) add(std::move(l));
  if (options.input_shape.ndim() > 0) {
    Shape s = options.input_shape;
    s.insert(0, -1);
    build({s});
  }
}

void Sequential::add(std::shared_ptr<nn::Layer> layer) {
  adopt(layer);
  for (const auto& l : layers_) {
    OSPREY_CHECK(l->name() != layer->name(),
                 "{}: all layers must have unique names; '{}' is already in the model", name(),
                 layer->name());
  }
  layers_.push_back(std::move(layer));
}

void Sequential::pop() {
  OSPREY_CHECK(!layers_.empty(), "{}: pop() on a model without layers", name());
  layers_.pop_back();
}

void Sequential::replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) {
  const std::shared_ptr<nn::Layer> old = adopt_replacement(name, layer);
  std::replace(layers_.begin(), layers_.end(), old, layer);
}

bool Sequential::remove_sublayer(const std::string& name) {
  const auto it = std::find_if(layers_.begin(), layers_.end(),
                               [&](const auto& l) { return l->name() == name; });
  if (it == layers_.end()) {
    get_layer(name);  // throws the ValueError listing the layers
  } else {
    layers_.erase(it);
  }
  return true;
}

void Sequential::build_impl(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  Shape s = input_shapes[0];
  for (const auto& l : layers_) {
    l->build({s});
    s = l->compute_output_shape({s});
  }
}

std::vector<Variable> Sequential::call_all(const std::vector<Variable>& inputs, bool training) {
  check_num_inputs(inputs.size(), 1);
  OSPREY_CHECK(!layers_.empty(), "{}: the model has no layers", name());
  Variable x = inputs[0];
  for (const auto& l : layers_) x = (*l)(x, training);
  return {x};
}

Shape Sequential::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  Shape s = input_shapes[0];
  for (const auto& l : layers_) s = l->compute_output_shape({s});
  return s;
}

std::vector<Network::LayerRow> Sequential::summary_rows() const {
  std::vector<LayerRow> rows;
  Shape s;
  bool known = built();
  if (known) {
    s = build_input_shapes()[0];
    s[0] = -1;
  }
  for (const auto& l : layers_) {
    if (known && l->built()) {
      s = l->compute_output_shape({s});
    } else {
      known = false;
      s = Shape();
    }
    rows.push_back({l->name(), l->class_name(), s, l->count_params()});
  }
  return rows;
}

nlohmann::json Sequential::get_config() const {
  nlohmann::json c = {{"name", name()},
                      {"trainable", trainable()},
                      {"dtype", dtype_policy().name()},
                      {"layers", nlohmann::json::array()}};
  for (const auto& l : layers_) c["layers"].push_back(nn::serialize_layer(*l));
  if (built()) {
    nlohmann::json shape = nlohmann::json::array();
    for (int64_t d : build_input_shapes()[0])
      shape.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
    c["build_input_shape"] = shape;
  }
  return c;
}

std::shared_ptr<nn::Layer> Sequential::from_config(const nlohmann::json& c) {
  const nlohmann::json& entries = c.at("layers");
  OSPREY_CHECK(entries.is_array(), "layers: must be an array of layers. Received: {}",
               entries.dump());
  std::vector<std::shared_ptr<nn::Layer>> layers;
  for (size_t i = 0; i < entries.size(); ++i) {
    // Keras writes the input as a first InputLayer entry; keras_config.h made its shape the
    // build_input_shape. Later entries keep their index in the file for errors.
    if (i == 0 && entries[i].is_object() && entries[i].contains("class_name") &&
        entries[i]["class_name"] == "InputLayer")
      continue;
    layers.push_back(nn::deserialize_layer(entries[i], fmt::format("layers[{}]", i)));
  }
  SequentialOptions o;
  o.name = c.value("name", std::string());
  o.trainable = c.value("trainable", true);
  o.dtype = c.value("dtype", std::string());
  auto m = std::make_shared<Sequential>(std::move(layers), o);
  if (c.contains("build_input_shape")) {
    Shape s;
    for (const auto& d : c["build_input_shape"]) s.push_back(d.is_null() ? -1 : d.get<int64_t>());
    m->build({s});
  }
  return m;
}

void register_model_classes() {
  static const bool once = [] {
    nn::register_layer("Sequential", &Sequential::from_config);
    nn::register_layer("Functional", &Functional::from_config);
    nn::register_layer("GPT", &GPT::from_config);
    return true;
  }();
  (void)once;
}

}  // namespace osprey::models
