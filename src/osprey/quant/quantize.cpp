#include "osprey/quant/quantize.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "osprey/core/error.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/conv2d.h"
#include "osprey/nn/layers/dense.h"
#include "osprey/nn/layers/embedding.h"
#include "osprey/quant/quantized_conv2d.h"
#include "osprey/quant/quantized_dense.h"
#include "osprey/quant/quantized_embedding.h"

namespace osprey::quant {

namespace {

// The classes int8_form() swaps, as error messages list them.
constexpr const char* kQuantizable = "Dense, Conv2D and Embedding";
constexpr const char* kQuantizableAny = "Dense, Conv2D or Embedding";

bool wanted(const QuantizeOptions& o, const std::string& name) {
  return o.layers.empty() || std::find(o.layers.begin(), o.layers.end(), name) != o.layers.end();
}

// The int8 form of a quantizable layer, or null when int8 has none for its class.
std::shared_ptr<nn::Layer> int8_form(const nn::Layer& layer) {
  if (const auto* dense = dynamic_cast<const nn::Dense*>(&layer))
    return QuantizedDense::from_dense(*dense);
  if (const auto* conv = dynamic_cast<const nn::Conv2D*>(&layer))
    return QuantizedConv2D::from_conv2d(*conv);
  if (const auto* emb = dynamic_cast<const nn::Embedding*>(&layer))
    return QuantizedEmbedding::from_embedding(*emb);
  return nullptr;
}

bool is_quantized(const nn::Layer& layer) {
  return dynamic_cast<const QuantizedDense*>(&layer) != nullptr ||
         dynamic_cast<const QuantizedConv2D*>(&layer) != nullptr ||
         dynamic_cast<const QuantizedEmbedding*>(&layer) != nullptr;
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
    if (std::shared_ptr<nn::Layer> q = int8_form(*layer)) {
      model.replace_sublayer(layer->name(), q);
      done.push_back(q->variables().front().name());
      continue;
    }
    OSPREY_CHECK(o.layers.empty() || !is_quantized(*layer),
                 "quantize: layer '{}' is already quantized", layer->name());
    OSPREY_CHECK(o.layers.empty(),
                 "quantize: layer '{}' is a {}; mode \"int8\" quantizes {} layers only",
                 layer->name(), layer->class_name(), kQuantizable);
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
  OSPREY_CHECK(!done.empty(), "quantize: model '{}' has no {} layer left to quantize (mode \"{}\")",
               model.name(), kQuantizableAny, mode);
  return done;
}

void register_layers() {
  static const bool once = [] {
    nn::register_layer("QuantizedDense", &QuantizedDense::from_config);
    nn::register_layer("QuantizedConv2D", &QuantizedConv2D::from_config);
    nn::register_layer("QuantizedEmbedding", &QuantizedEmbedding::from_config);
    return true;
  }();
  (void)once;
}

}  // namespace osprey::quant
