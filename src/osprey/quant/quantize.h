// quantize(model, mode): post-training quantization of a built model by swapping layers (the
// seeds' model.quantize("int8")), never by branches inside layers. Mode "int8": every nn::Dense,
// nn::Conv2D and nn::Embedding, at any depth of nested containers (Sequential models), becomes a
// QuantizedDense, QuantizedConv2D or QuantizedEmbedding keeping its name and weight paths; other
// layers stay in float32 (Keras does the same for layers it cannot quantize). It works on nn::Layer (a models::Model is one) through Layer::replace_sublayer, so
// quant needs nothing above level 3.
//   quant::quantize(*model, "int8");
//   models::save_model(*model, "fmnist_int8");   // int8 kernels + float32 scales in safetensors
//   quant::register_layers();                    // once, before load_model of a quantized model
//   auto loaded = models::load_model("fmnist_int8");   // osprey::load_model registers them itself
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "osprey/nn/layer.h"

namespace osprey::quant {

struct QuantizeOptions {
  // Only the layers with these names are quantized (each must exist and be quantizable);
  // empty: every quantizable layer.
  std::vector<std::string> layers{};
};

// The modes quantize() accepts, in the order error messages list them.
const std::vector<std::string>& quantization_modes();

// Swaps the model's layers in place and returns the weight paths of the quantized kernels.
// ValueError for an unknown mode, an unbuilt model, a model without any Dense, Conv2D or Embedding layer, a
// named layer that is missing, not quantizable or already quantized; NotImplementedError for a container
// that cannot swap layers (a Functional model, for now).
std::vector<std::string> quantize(nn::Layer& model, std::string_view mode,
                                  const QuantizeOptions& options = {});

// Registers QuantizedDense, QuantizedConv2D and QuantizedEmbedding with the layer registry
// (idempotent), so load_model() can rebuild saved quantized models.
void register_layers();

}  // namespace osprey::quant
