// SublayerSwaps: how a layer that makes its own sublayers from its hyperparameters
// (TransformerBlock's attention and dense layers, models::GPT's embeddings and blocks) remembers
// the ones replace_sublayer() swapped (quant::quantize's int8 and float8 forms), so that the swap
// survives get_config()/from_config() and a saved quantized model loads. The config then carries
//   "swapped_sublayers": {"feedforward_intermediate_dense": {"class_name": "QuantizedDense", ...}}
// holding every sublayer that was swapped or holds swaps of its own (nested blocks), and the
// rebuilt layer makes each of those from its entry instead of the default one, before anything
// builds it: the weights a load expects (int8 kernels, scales) are the only ones ever created.
//   swaps_.read(config, name());                        // in from_config
//   dense_ = swaps_.resolve(make_default_dense(), name()); // in build, before building it
//   swaps_.record(name);                                 // in replace_sublayer
//   swaps_.write(config, sublayers());                   // in get_config
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/nn/layer.h"

namespace osprey::nn {

class SublayerSwaps {
 public:
  static constexpr const char* kConfigKey = "swapped_sublayers";

  // Takes config["swapped_sublayers"] when present; ValueError naming `owner` when it is not an
  // object of layer entries.
  void read(const nlohmann::json& config, const std::string& owner);
  // `made` (a default sublayer, not built) when no entry names it; else the layer its entry
  // describes, which must keep the name and be a T (ValueError naming owner and both classes).
  template <class T>
  std::shared_ptr<T> resolve(std::shared_ptr<T> made, const std::string& owner) {
    const std::shared_ptr<Layer> swapped = from_entry(made->name(), owner);
    if (swapped == nullptr) return made;
    auto typed = std::dynamic_pointer_cast<T>(swapped);
    OSPREY_CHECK(typed != nullptr,
                 "{}: the swapped sublayer '{}' is a {}, which cannot stand for a {}", owner,
                 made->name(), swapped->class_name(), made->class_name());
    return typed;
  }
  // After replace_sublayer(name, ...): that sublayer now differs from the default.
  void record(const std::string& name) { swapped_.insert(name); }
  // Writes config["swapped_sublayers"] (nothing when no sublayer differs from its default).
  // `sublayers` empty (the layer is not built yet): the entries read, unchanged.
  void write(nlohmann::json& config, const std::vector<std::shared_ptr<Layer>>& sublayers) const;

 private:
  std::shared_ptr<Layer> from_entry(const std::string& name, const std::string& owner);

  nlohmann::json entries_ = nlohmann::json::object();  // as read, by sublayer name
  std::set<std::string> swapped_;
};

// Layer::replace_sublayer's checks for a layer holding its sublayers in typed slots: `layer` not
// null and keeping `name`. Returns true after putting it into `slot` when the slot holds the
// sublayer named `name` (ValueError naming owner when the layer is not a T); false otherwise.
template <class T>
bool replace_in_slot(std::shared_ptr<T>& slot, const std::string& name,
                     const std::shared_ptr<Layer>& layer, const Layer& owner) {
  if (slot == nullptr || slot->name() != name) return false;
  OSPREY_CHECK(layer != nullptr && layer->name() == name,
               "{}: the layer replacing '{}' must keep its name. Received: '{}'", owner.name(),
               name, layer == nullptr ? std::string("null") : layer->name());
  auto typed = std::dynamic_pointer_cast<T>(layer);
  OSPREY_CHECK(typed != nullptr, "{}: '{}' is a {}; a {} cannot take its place", owner.name(), name,
               slot->class_name(), layer->class_name());
  typed->set_path_prefix(owner.path());
  slot = std::move(typed);
  return true;
}

}  // namespace osprey::nn
