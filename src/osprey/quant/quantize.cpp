#include "osprey/quant/quantize.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "osprey/core/error.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/dense.h"
#include "osprey/quant/quantized_dense.h"

namespace osprey::quant {

namespace {

bool wanted(const QuantizeOptions& o, const std::string& name) {
  return o.layers.empty() || std::find(o.layers.begin(), o.layers.end(), name) != o.layers.end();
}

void swap_layers(nn::Layer& model, const QuantizeOptions& o, std::vector<std::string>& done,
                 std::vector<std::string>& seen) {
  for (const std::shared_ptr<nn::Layer>& layer : model.sublayers()) {
    if (!layer->sublayers().empty()) {  // a container (a nested model)
      swap_layers(*layer, o, done, seen);
      continue;
    }
    if (!wanted(o, layer->name())) continue;
    seen.push_back(layer->name());
    if (const auto* dense = dynamic_cast<const nn::Dense*>(layer.get())) {
      auto q = QuantizedDense::from_dense(*dense);
      model.replace_sublayer(dense->name(), q);
      done.push_back(q->kernel().name());
      continue;
    }
    OSPREY_CHECK(o.layers.empty() || dynamic_cast<const QuantizedDense*>(layer.get()) == nullptr,
                 "quantize: layer '{}' is already quantized", layer->name());
    OSPREY_CHECK(o.layers.empty(), "quantize: layer '{}' is a {}; mode \"int8\" quantizes Dense layers only",
                 layer->name(), layer->class_name());
  }
}

}  // namespace

const std::vector<std::string>& quantization_modes() {
  static const std::vector<std::string> modes = {"int8"};
  return modes;
}

std::vector<std::string> quantize(nn::Layer& model, std::string_view mode, const QuantizeOptions& options) {
  const auto& modes = quantization_modes();
  OSPREY_CHECK(std::find(modes.begin(), modes.end(), mode) != modes.end(),
               "quantize: unsupported mode \"{}\". Supported modes: {}", mode, fmt::join(modes, ", "));
  OSPREY_CHECK(model.built(), "quantize: model '{}' is not built yet; call it on data (or build it) first",
               model.name());
  std::vector<std::string> done, seen;
  swap_layers(model, options, done, seen);
  for (const std::string& name : options.layers) {
    OSPREY_CHECK(std::find(seen.begin(), seen.end(), name) != seen.end(),
                 "quantize: model '{}' has no layer named '{}'", model.name(), name);
  }
  OSPREY_CHECK(!done.empty(), "quantize: model '{}' has no Dense layer left to quantize (mode \"{}\")",
               model.name(), mode);
  return done;
}

void register_layers() {
  static const bool once = [] {
    nn::register_layer("QuantizedDense", &QuantizedDense::from_config);
    return true;
  }();
  (void)once;
}

}  // namespace osprey::quant
