#include "osprey/quant/quantize.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "osprey/core/error.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/conv2d.h"
#include "osprey/nn/layers/dense.h"
#include "osprey/nn/layers/embedding.h"
#include "osprey/nn/layers/multi_head_attention.h"
#include "osprey/nn/layers/pooling2d.h"
#include "osprey/quant/float8_conv2d.h"
#include "osprey/quant/float8_dense.h"
#include "osprey/quant/float8_multi_head_attention.h"
#include "osprey/quant/quantized_conv2d.h"
#include "osprey/quant/quantized_dense.h"
#include "osprey/quant/quantized_embedding.h"
#include "osprey/quant/quantized_multi_head_attention.h"

namespace osprey::quant {

namespace {

bool wanted(const QuantizeOptions& o, const std::string& name) {
  return o.layers.empty() || std::find(o.layers.begin(), o.layers.end(), name) != o.layers.end();
}

bool is_int8(const nn::Layer& l) {
  return dynamic_cast<const QuantizedDense*>(&l) != nullptr ||
         dynamic_cast<const QuantizedConv2D*>(&l) != nullptr ||
         dynamic_cast<const QuantizedEmbedding*>(&l) != nullptr ||
         dynamic_cast<const QuantizedMultiHeadAttention*>(&l) != nullptr;
}

bool is_quantized(const nn::Layer& l) {
  return is_int8(l) || dynamic_cast<const Float8Dense*>(&l) != nullptr ||
         dynamic_cast<const Float8Conv2D*>(&l) != nullptr ||
         dynamic_cast<const Float8MultiHeadAttention*>(&l) != nullptr;
}

// The layer that replaces `layer` in `mode`, or null when the mode leaves it alone.
std::shared_ptr<nn::Layer> quantized_form(const nn::Layer& layer, std::string_view mode,
                                          const QuantizeOptions& o) {
  if (is_quantized(layer)) return nullptr;
  const bool int8 = mode == "int8";
  if (const auto* dense = dynamic_cast<const nn::Dense*>(&layer)) {
    if (int8) return QuantizedDense::from_dense(*dense);
    return Float8Dense::from_dense(*dense, o.float8);
  }
  if (const auto* conv = dynamic_cast<const nn::Conv2D*>(&layer)) {
    if (int8) return QuantizedConv2D::from_conv2d(*conv);
    return Float8Conv2D::from_conv2d(*conv, o.float8);
  }
  if (const auto* emb = dynamic_cast<const nn::Embedding*>(&layer); emb != nullptr && int8) {
    return QuantizedEmbedding::from_embedding(*emb);
  }
  // The whole attention is swapped (its projections are its own weights, not sublayers), and
  // GroupedQueryAttention with it.
  if (const auto* mha = dynamic_cast<const nn::MultiHeadAttention*>(&layer)) {
    if (int8) return QuantizedMultiHeadAttention::from_attention(*mha);
    return Float8MultiHeadAttention::from_attention(*mha, o.float8);
  }
  return nullptr;
}

// The QuantizedConv2D with `next` folded in when layer is a Conv2D, next a MaxPooling2D that can
// be folded and the container runs its layers in a chain (it then has removed next); else null.
std::shared_ptr<nn::Layer> folded_form(nn::Layer& model, const nn::Layer& layer,
                                       const nn::Layer& next) {
  const auto* conv = dynamic_cast<const nn::Conv2D*>(&layer);
  const auto* pool = dynamic_cast<const nn::MaxPooling2D*>(&next);
  if (conv == nullptr || pool == nullptr || !QuantizedConv2D::can_fold(*conv, *pool))
    return nullptr;
  std::shared_ptr<nn::Layer> q = QuantizedConv2D::from_conv2d(*conv, pool);
  return model.remove_sublayer(pool->name()) ? q : nullptr;
}

// What a mode quantizes, for the errors: "Dense, Conv2D, MultiHeadAttention and Embedding" (all)
// or "... or ..." (any).
std::string quantizable_kinds(std::string_view mode, const char* conjunction) {
  return mode == "int8" ? fmt::format("Dense, Conv2D, MultiHeadAttention {} Embedding", conjunction)
                        : fmt::format("Dense, Conv2D {} MultiHeadAttention", conjunction);
}

void swap_layers(nn::Layer& model, std::string_view mode, const QuantizeOptions& o,
                 std::vector<std::string>& done, std::vector<std::string>& seen) {
  const std::vector<std::shared_ptr<nn::Layer>> layers = model.sublayers();
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::shared_ptr<nn::Layer>& layer = layers[i];
    if (!layer->sublayers().empty()) {  // a container (a nested model)
      swap_layers(*layer, mode, o, done, seen);
      continue;
    }
    if (!wanted(o, layer->name())) continue;
    seen.push_back(layer->name());
    std::shared_ptr<nn::Layer> q;
    if (mode == "int8" && o.fold_max_pooling && i + 1 < layers.size()) {
      q = folded_form(model, *layer, *layers[i + 1]);
      if (q != nullptr) ++i;  // the pooling layer is gone
    }
    if (q == nullptr) q = quantized_form(*layer, mode, o);
    if (q != nullptr) {
      model.replace_sublayer(layer->name(), q);
      // The quantized tables and kernels: every int8 weight, or every float8-scaled kernel.
      for (const nn::Weight& w : q->own_weights()) {
        if (mode == "int8" ? w.variable.dtype() == DType::int8 : w.name.ends_with("kernel"))
          done.push_back(w.variable.name());
      }
      continue;
    }
    OSPREY_CHECK(o.layers.empty() || !is_quantized(*layer),
                 "quantize: layer '{}' is already quantized", layer->name());
    OSPREY_CHECK(o.layers.empty(),
                 "quantize: layer '{}' is a {}; mode \"{}\" quantizes {} layers only",
                 layer->name(), layer->class_name(), mode, quantizable_kinds(mode, "and"));
  }
}

void collect_int8(const nn::Layer& model, std::vector<std::string>& names) {
  for (const std::shared_ptr<nn::Layer>& layer : model.sublayers()) {
    if (is_int8(*layer)) names.push_back(layer->name());
    collect_int8(*layer, names);
  }
}

}  // namespace

std::vector<std::string> int8_layers(const nn::Layer& model) {
  std::vector<std::string> names;
  if (is_int8(model)) names.push_back(model.name());
  collect_int8(model, names);
  return names;
}

const std::vector<std::string>& quantization_modes() {
  static const std::vector<std::string> modes = {"int8", "float8"};
  return modes;
}

std::vector<std::string> quantize(nn::Layer& model, std::string_view mode,
                                  const QuantizeOptions& options) {
  const auto& modes = quantization_modes();
  OSPREY_CHECK(std::find(modes.begin(), modes.end(), mode) != modes.end(),
               "quantize: unsupported mode \"{}\". Supported modes: {}", mode,
               fmt::join(modes, ", "));
  OSPREY_CHECK(model.built(),
               "quantize: model '{}' is not built yet; call it on data (or build it) first",
               model.name());
  // The model now holds quantized layers, which anything rebuilding it from its config (the
  // replicas of a distribution strategy, clone_model) must find registered.
  register_layers();
  std::vector<std::string> done, seen;
  if (mode == "float8") precision::check_delayed_scaling(options.float8, "quantize");
  swap_layers(model, mode, options, done, seen);
  for (const std::string& name : options.layers) {
    OSPREY_CHECK(std::find(seen.begin(), seen.end(), name) != seen.end(),
                 "quantize: model '{}' has no layer named '{}'", model.name(), name);
  }
  OSPREY_CHECK(!done.empty(), "quantize: model '{}' has no {} layer left to quantize (mode \"{}\")",
               model.name(), quantizable_kinds(mode, "or"), mode);
  return done;
}

void register_layers() {
  static const bool once = [] {
    nn::register_layer("QuantizedDense", &QuantizedDense::from_config);
    nn::register_layer("QuantizedConv2D", &QuantizedConv2D::from_config);
    nn::register_layer("QuantizedEmbedding", &QuantizedEmbedding::from_config);
    nn::register_layer("Float8Dense", &Float8Dense::from_config);
    nn::register_layer("Float8Conv2D", &Float8Conv2D::from_config);
    nn::register_layer("QuantizedMultiHeadAttention", &QuantizedMultiHeadAttention::from_config);
    nn::register_layer("Float8MultiHeadAttention", &Float8MultiHeadAttention::from_config);
    return true;
  }();
  (void)once;
}

}  // namespace osprey::quant
