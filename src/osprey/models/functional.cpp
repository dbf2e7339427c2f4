// The functional model: a topological order of the layer calls between inputs and outputs,
// and its Keras-like config (each layer with the calls that feed it).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "osprey/models/network.h"
#include "osprey/nn/layer_registry.h"

namespace osprey::models {

Functional::Functional(std::vector<nn::SymbolicTensor> inputs,
                       std::vector<nn::SymbolicTensor> outputs, std::string name)
    : Network("Functional", {name.empty() ? nn::unique_name("functional") : name, "", true}),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)) {
  OSPREY_CHECK(!inputs_.empty() && !outputs_.empty(),
               "{}: a functional model needs inputs and outputs", this->name());
  std::set<const Node*> input_nodes;
  for (const auto& in : inputs_) {
    OSPREY_CHECK(in.defined() && in.node()->layer == nullptr,
                 "{}: every input must come from nn::Input()", this->name());
    input_nodes.insert(in.node().get());
  }
  // Iterative post-order from the outputs: a node runs after every node it reads.
  std::set<const Node*> done;
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const auto& out : outputs_) {
    OSPREY_CHECK(out.defined(), "{}: an output is undefined", this->name());
    stack.emplace_back(out.node().get(), 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (done.count(node)) {
        stack.pop_back();
        continue;
      }
      if (node->layer == nullptr) {
        OSPREY_CHECK(input_nodes.count(node),
                     "{}: the outputs depend on input '{}', which is not among "
                     "the model's inputs",
                     this->name(), node->input_name);
        done.insert(node);
        stack.pop_back();
        continue;
      }
      if (next < node->inputs.size()) {
        const Node* child = node->inputs[next++].node().get();
        if (!done.count(child)) stack.emplace_back(child, 0);
        continue;
      }
      done.insert(node);
      order_.push_back(node);
      node_layers_.push_back(node->layer);
      stack.pop_back();
    }
  }
  std::set<const nn::Layer*> seen;
  for (const auto& l : node_layers_) {
    if (seen.insert(l.get()).second) {
      adopt(l);
      layers_.push_back(l);
    }
  }
  std::vector<Shape> shapes;
  for (const auto& in : inputs_) shapes.push_back(in.shape());
  build(shapes);
}

void Functional::replace_sublayer(const std::string& name, std::shared_ptr<nn::Layer> layer) {
  const std::shared_ptr<nn::Layer> old = adopt_replacement(name, layer);
  std::replace(node_layers_.begin(), node_layers_.end(), old, layer);
  std::replace(layers_.begin(), layers_.end(), old, layer);
}

std::vector<Variable> Functional::call_all(const std::vector<Variable>& inputs, bool training) {
  OSPREY_CHECK(inputs.size() == inputs_.size(), "{}: expected {} input(s), received {}", name(),
               inputs_.size(), inputs.size());
  std::map<const Node*, Variable> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& want = inputs_[i].shape();
    const Shape& got = inputs[i].shape();
    bool ok = want.ndim() == got.ndim();
    for (int d = 1; ok && d < want.ndim(); ++d) ok = want[d] == got[d];
    OSPREY_CHECK(ok, "{}: input {} ('{}') expects shape {} (batch first), received {}", name(), i,
                 inputs_[i].node()->input_name, want.to_string(), got.to_string());
    values[inputs_[i].node().get()] = inputs[i];
  }
  for (size_t i = 0; i < order_.size(); ++i) {
    const Node* n = order_[i];
    std::vector<Variable> args;
    for (const auto& in : n->inputs) args.push_back(values.at(in.node().get()));
    values[n] = (*node_layers_[i])(args, training);
  }
  std::vector<Variable> out;
  for (const auto& o : outputs_) out.push_back(values.at(o.node().get()));
  return out;
}

Shape Functional::compute_output_shape(const std::vector<Shape>& input_shapes) {
  return outputs_.at(0).shape();
}

std::vector<Network::LayerRow> Functional::summary_rows() const {
  std::vector<LayerRow> rows;
  for (const auto& in : inputs_)
    rows.push_back({in.node()->input_name, "InputLayer", in.shape(), 0});
  std::set<const nn::Layer*> seen;
  for (size_t i = 0; i < order_.size(); ++i) {
    const Node* n = order_[i];
    const std::shared_ptr<nn::Layer>& layer = node_layers_[i];
    if (!seen.insert(layer.get()).second) continue;
    Shape s;
    // The output shape of the layer's first call.
    for (const auto& o : outputs_) {
      if (o.node().get() == n) s = o.shape();
    }
    if (s.ndim() == 0) {
      std::vector<Shape> in;
      for (const auto& x : n->inputs) in.push_back(x.shape());
      s = layer->compute_output_shape(in);
    }
    rows.push_back({layer->name(), layer->class_name(), s, layer->count_params()});
  }
  return rows;
}

namespace {
nlohmann::json shape_json(const Shape& s) {
  nlohmann::json j = nlohmann::json::array();
  for (int64_t d : s) j.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
  return j;
}
Shape shape_from_json(const nlohmann::json& j) {
  Shape s;
  for (const auto& d : j) s.push_back(d.is_null() ? -1 : d.get<int64_t>());
  return s;
}
}  // namespace

nlohmann::json Functional::get_config() const {
  // A tensor is named by [layer name, call index of that layer, 0]; inputs by [input name, 0, 0].
  std::map<const Node*, nlohmann::json> refs;
  std::map<const nn::Layer*, int> calls;
  nlohmann::json layers = nlohmann::json::array(), inputs = nlohmann::json::array();
  for (const auto& in : inputs_) {
    refs[in.node().get()] = {in.node()->input_name, 0, 0};
    inputs.push_back({in.node()->input_name, 0, 0});
    layers.push_back({{"class_name", "InputLayer"},
                      {"name", in.node()->input_name},
                      {"config",
                       {{"name", in.node()->input_name},
                        {"batch_shape", shape_json(in.shape())},
                        {"dtype", std::string(dtype_name(in.dtype()))}}}});
  }
  nlohmann::json execution = nlohmann::json::array();
  std::map<const nn::Layer*, size_t> index;
  for (size_t i = 0; i < order_.size(); ++i) {
    const Node* n = order_[i];
    const nn::Layer* l = node_layers_[i].get();
    if (!index.count(l)) {
      index[l] = layers.size();
      nlohmann::json entry = nn::serialize_layer(*l);
      entry["name"] = l->name();
      entry["inbound_nodes"] = nlohmann::json::array();
      layers.push_back(entry);
    }
    nlohmann::json args = nlohmann::json::array();
    for (const auto& in : n->inputs) args.push_back(refs.at(in.node().get()));
    layers[index[l]]["inbound_nodes"].push_back(args);
    const int k = calls[l]++;
    refs[n] = {l->name(), k, 0};
    execution.push_back({l->name(), k});
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& o : outputs_) outputs.push_back(refs.at(o.node().get()));
  return {{"name", name()},         {"trainable", trainable()}, {"layers", layers},
          {"input_layers", inputs}, {"output_layers", outputs}, {"execution_order", execution}};
}

std::shared_ptr<nn::Layer> Functional::from_config(const nlohmann::json& c) {
  std::map<std::string, std::shared_ptr<nn::Layer>> layer_by_name;
  std::map<std::string, nlohmann::json> inbound;
  std::map<std::string, nn::SymbolicTensor> tensors;  // "name/call" -> tensor
  auto key = [](const nlohmann::json& ref) {
    return ref.at(0).get<std::string>() + "/" + std::to_string(ref.at(1).get<int>());
  };
  const nlohmann::json& entries = c.at("layers");
  OSPREY_CHECK(entries.is_array(), "layers: must be an array of layers. Received: {}",
               entries.dump());
  for (size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& l = entries[i];
    const std::string cls = l.at("class_name").get<std::string>();
    const std::string name = l.at("name").get<std::string>();
    if (cls == "InputLayer") {
      const auto& cfg = l.at("config");
      Shape s = shape_from_json(cfg.at("batch_shape"));
      s.erase(0);
      tensors[name + "/0"] =
          nn::Input(s, name, parse_dtype(cfg.value("dtype", std::string("float32"))));
      continue;
    }
    layer_by_name[name] = nn::deserialize_layer(l, fmt::format("layers[{}]", i));
    inbound[name] = l.at("inbound_nodes");
  }
  for (const auto& step : c.at("execution_order")) {
    const std::string name = step.at(0).get<std::string>();
    const int k = step.at(1).get<int>();
    OSPREY_CHECK(layer_by_name.count(name),
                 "functional config: execution_order names unknown layer '{}'", name);
    std::vector<nn::SymbolicTensor> args;
    for (const auto& ref : inbound[name].at(static_cast<size_t>(k))) {
      OSPREY_CHECK(tensors.count(key(ref)),
                   "functional config: layer '{}' reads '{}' before it is computed", name,
                   key(ref));
      args.push_back(tensors[key(ref)]);
    }
    tensors[name + "/" + std::to_string(k)] = (*layer_by_name[name])(args);
  }
  std::vector<nn::SymbolicTensor> ins, outs;
  for (const auto& r : c.at("input_layers")) ins.push_back(tensors.at(key(r)));
  for (const auto& r : c.at("output_layers")) outs.push_back(tensors.at(key(r)));
  auto m = std::make_shared<Functional>(ins, outs, c.value("name", std::string()));
  if (!c.value("trainable", true)) m->set_trainable(false);
  return m;
}

}  // namespace osprey::models
