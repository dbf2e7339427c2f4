// The functional model: a topological order of the layer calls between inputs and outputs,
// and its Keras-like config (each layer with the calls that feed it). A call may have several
// outputs and keyword tensors (initial_state); values are kept per (node, output index).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "osprey/models/network.h"
#include "osprey/nn/layer_registry.h"

namespace osprey::models {

namespace {
// What a call reads: its inputs, then its keyword tensors.
const nn::SymbolicTensor& read_by(const nn::SymbolicTensor::Node& node, size_t i) {
  return i < node.inputs.size() ? node.inputs[i] : node.initial_state[i - node.inputs.size()];
}
size_t reads(const nn::SymbolicTensor::Node& node) {
  return node.inputs.size() + node.initial_state.size();
}
}  // namespace

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
      if (next < reads(*node)) {
        const Node* child = read_by(*node, next++).node().get();
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
  // Keyed by (node, output index): one map entry per tensor, as many as single-output graphs had.
  std::map<std::pair<const Node*, size_t>, Variable> values;
  const auto value_of = [&](const nn::SymbolicTensor& t) {
    return values.at({t.node().get(), t.index()});
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& want = inputs_[i].shape();
    const Shape& got = inputs[i].shape();
    bool ok = want.ndim() == got.ndim();
    for (int d = 1; ok && d < want.ndim(); ++d) ok = want[d] < 0 || want[d] == got[d];
    OSPREY_CHECK(ok, "{}: input {} ('{}') expects shape {} (batch first), received {}", name(), i,
                 inputs_[i].node()->input_name, want.to_string(), got.to_string());
    values[{inputs_[i].node().get(), 0}] = inputs[i];
  }
  for (size_t i = 0; i < order_.size(); ++i) {
    const Node* n = order_[i];
    std::vector<Variable> args;
    for (const auto& in : n->inputs) args.push_back(value_of(in));
    if (n->num_outputs == 1 && n->initial_state.empty()) {
      values[{n, 0}] = (*node_layers_[i])(args, training);
      continue;
    }
    nn::CallArgs<Variable> kwargs;
    for (const auto& s : n->initial_state) kwargs.initial_state.push_back(value_of(s));
    std::vector<Variable> outs = node_layers_[i]->call_multi(args, kwargs, training);
    OSPREY_CHECK(outs.size() == n->num_outputs,
                 "{}: layer '{}' gave {} outputs where the graph was built with {}", name(),
                 node_layers_[i]->name(), outs.size(), n->num_outputs);
    for (size_t k = 0; k < outs.size(); ++k) values[{n, k}] = std::move(outs[k]);
  }
  std::vector<Variable> out;
  for (const auto& o : outputs_) out.push_back(value_of(o));
  return out;
}

Shape Functional::compute_output_shape(const std::vector<Shape>& input_shapes) {
  return outputs_.at(0).shape();
}

std::vector<Shape> Functional::compute_output_shapes(const std::vector<Shape>& /*input_shapes*/,
                                                     const nn::CallArgs<Shape>& args) {
  check_no_call_args(args.initial_state.size());
  std::vector<Shape> out;
  for (const auto& o : outputs_) out.push_back(o.shape());
  return out;
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
    // The (first) output shape of the layer's first call.
    for (const auto& o : outputs_) {
      if (o.node().get() == n && o.index() == 0) s = o.shape();
    }
    if (s.ndim() == 0) {
      std::vector<Shape> in;
      for (const auto& x : n->inputs) in.push_back(x.shape());
      nn::CallArgs<Shape> kwargs;
      for (const auto& x : n->initial_state) kwargs.initial_state.push_back(x.shape());
      s = layer->compute_output_shapes(in, kwargs).at(0);
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
  // A tensor is named by [layer name, call index of that layer, output index]; inputs by
  // [input name, 0, 0]. refs holds the first two per node.
  std::map<const Node*, nlohmann::json> refs;
  const auto ref = [&](const nn::SymbolicTensor& t) {
    nlohmann::json r = refs.at(t.node().get());
    r.push_back(t.index());
    return r;
  };
  std::map<const nn::Layer*, int> calls;
  nlohmann::json layers = nlohmann::json::array(), inputs = nlohmann::json::array();
  for (const auto& in : inputs_) {
    refs[in.node().get()] = {in.node()->input_name, 0};
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
    for (const auto& in : n->inputs) args.push_back(ref(in));
    if (!n->initial_state.empty()) {
      nlohmann::json states = nlohmann::json::array();
      for (const auto& st : n->initial_state) states.push_back(ref(st));
      args.at(0).push_back({{"initial_state", states}});
    }
    layers[index[l]]["inbound_nodes"].push_back(args);
    const int k = calls[l]++;
    refs[n] = {l->name(), k};
    execution.push_back({l->name(), k});
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& o : outputs_) outputs.push_back(ref(o));
  return {{"name", name()},         {"trainable", trainable()}, {"layers", layers},
          {"input_layers", inputs}, {"output_layers", outputs}, {"execution_order", execution}};
}

std::shared_ptr<nn::Layer> Functional::from_config(const nlohmann::json& c) {
  std::map<std::string, std::shared_ptr<nn::Layer>> layer_by_name;
  std::vector<std::string> layer_order;  // file order, for Keras's order of calls
  std::map<std::string, nlohmann::json> inbound;
  std::map<std::string, std::vector<nn::SymbolicTensor>> tensors;  // "name/call" -> its outputs
  const auto key = [](const nlohmann::json& ref) {
    OSPREY_CHECK(
        ref.is_array() && ref.size() >= 2 && ref[0].is_string() && ref[1].is_number_integer(),
        "functional config: a tensor is named [layer name, call index, output index]. "
        "Received: {}",
        ref.dump());
    return ref[0].get<std::string>() + "/" + std::to_string(ref[1].get<int>());
  };
  // The tensor a reference names, or nullptr while its call has not run.
  const auto find = [&](const nlohmann::json& ref,
                        const std::string& reader) -> const nn::SymbolicTensor* {
    const auto it = tensors.find(key(ref));
    if (it == tensors.end()) return nullptr;
    const size_t t = ref.size() > 2 ? ref[2].get<size_t>() : 0;
    OSPREY_CHECK(t < it->second.size(),
                 "functional config: layer '{}' reads output {} of '{}', which has {} output(s)",
                 reader, t, key(ref), it->second.size());
    return &it->second[t];
  };
  // Every reference a call reads: its inputs, then the initial_state kept on the first one.
  const auto refs_of = [](const nlohmann::json& node, const std::string& reader) {
    OSPREY_CHECK(node.is_array() && !node.empty(),
                 "functional config: layer '{}': a call is a list of input references. "
                 "Received: {}",
                 reader, node.dump());
    std::vector<nlohmann::json> args(node.begin(), node.end()), states;
    if (args[0].is_array() && args[0].size() == 4) {
      const nlohmann::json& kwargs = args[0][3];
      for (const auto& [k, v] : kwargs.items()) {
        OSPREY_CHECK(k == "initial_state" && v.is_array(),
                     "functional config: layer '{}': the only keyword tensors read are "
                     "initial_state (a list). Received: {}",
                     reader, kwargs.dump());
        states.assign(v.begin(), v.end());
      }
    }
    return std::pair{args, states};
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
      tensors[name + "/0"] = {
          nn::Input(s, name, parse_dtype(cfg.value("dtype", std::string("float32"))))};
      continue;
    }
    layer_by_name[name] = nn::deserialize_layer(l, fmt::format("layers[{}]", i));
    layer_order.push_back(name);
    inbound[name] = l.at("inbound_nodes");
  }
  // Runs call k of layer `name` when everything it reads exists; returns the first missing
  // reference otherwise.
  const auto try_call = [&](const std::string& name, size_t k) -> std::string {
    const auto [arg_refs, state_refs] = refs_of(inbound[name].at(k), name);
    std::vector<nn::SymbolicTensor> args;
    nn::CallArgs<nn::SymbolicTensor> kwargs;
    for (const auto* refs : {&arg_refs, &state_refs}) {
      for (const auto& r : *refs) {
        const nn::SymbolicTensor* t = find(r, name);
        if (t == nullptr) return key(r);
        (refs == &arg_refs ? args : kwargs.initial_state).push_back(*t);
      }
    }
    tensors[name + "/" + std::to_string(k)] = layer_by_name[name]->call_multi(args, kwargs);
    return "";
  };
  if (c.contains("execution_order")) {
    for (const auto& step : c.at("execution_order")) {
      const std::string name = step.at(0).get<std::string>();
      const int k = step.at(1).get<int>();
      OSPREY_CHECK(layer_by_name.count(name),
                   "functional config: execution_order names unknown layer '{}'", name);
      const std::string missing = try_call(name, static_cast<size_t>(k));
      OSPREY_CHECK(missing.empty(),
                   "functional config: layer '{}' reads '{}' before it is computed", name, missing);
    }
  } else {
    std::map<std::string, size_t> next;  // each layer's next call
    for (bool progress = true; progress;) {
      progress = false;
      for (const std::string& name : layer_order) {
        while (next[name] < inbound[name].size() && try_call(name, next[name]).empty()) {
          ++next[name];
          progress = true;
        }
      }
    }
    for (const std::string& name : layer_order) {
      if (next[name] == inbound[name].size()) continue;
      OSPREY_THROW(ValueError, "functional config: layer '{}' reads '{}', which no call computes",
                   name, try_call(name, next[name]));
    }
  }
  // Keras writes a single input or output as one reference rather than a list of them.
  const auto tensor_list = [&](const nlohmann::json& refs, const char* field) {
    std::vector<nn::SymbolicTensor> out;
    const bool single = refs.is_array() && !refs.empty() && refs[0].is_string();
    for (const auto& r : single ? nlohmann::json::array({refs}) : refs) {
      const nn::SymbolicTensor* t = find(r, field);
      OSPREY_CHECK(t != nullptr, "functional config: {} names '{}', which no call computes", field,
                   key(r));
      out.push_back(*t);
    }
    return out;
  };
  const std::vector<nn::SymbolicTensor> ins = tensor_list(c.at("input_layers"), "input_layers");
  const std::vector<nn::SymbolicTensor> outs = tensor_list(c.at("output_layers"), "output_layers");
  auto m = std::make_shared<Functional>(ins, outs, c.value("name", std::string()));
  if (!c.value("trainable", true)) m->set_trainable(false);
  return m;
}

}  // namespace osprey::models
