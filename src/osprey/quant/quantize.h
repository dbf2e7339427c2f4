// quantize(model, mode): quantization of a built model by swapping layers (the seeds' and
// Keras's model.quantize(...)), never by branches inside layers. At any depth of nested
// containers (Sequential and Functional models, models::GPT, TransformerEncoder/Decoder blocks),
// keeping names and weight paths:
//   "int8" (post-training, inference): every nn::Dense, nn::Conv2D, nn::Embedding and
//     nn::MultiHeadAttention (GroupedQueryAttention too) becomes a QuantizedDense,
//     QuantizedConv2D, QuantizedEmbedding or QuantizedMultiHeadAttention (the attention swapped
//     whole: its four projections are its own weights); a GPT's tied head reads the
//     QuantizedEmbedding's int8 table (see quantized_embedding.h); in a Sequential, a MaxPooling2D
//     right after a Conv2D (relu, linear, sigmoid or tanh) is folded into the QuantizedConv2D,
//     which then pools the int32 sums before dequantizing them (same predictions, bit for bit,
//     as the unfolded pair; see quantized_conv2d.h), and leaves the model;
//   "float8" (training): every nn::Dense becomes a Float8Dense, every nn::Conv2D a
//     Float8Conv2D and every attention a Float8MultiHeadAttention (delayed-scaling float8 fake
//     quantization, emulated on CPU; see float8_dense.h); train as before, the scaling state saves
//     with the model.
// Other layers stay in float32 (Keras does the same for layers it cannot quantize). It works on
// nn::Layer (a models::Network is one) through Layer::replace_sublayer, so quant needs nothing
// above level 4; layers that make their own sublayers keep the swaps in their config
// (nn/sublayer_swaps.h), so a quantized GPT saves and loads.
//   quant::quantize(*model, "int8");
//   models::save_model(*model, "fmnist_int8");   // int8 kernels + float32 scales in safetensors
//   quant::register_layers();                    // once, before load_model of a quantized model
//   auto loaded = models::load_model("fmnist_int8");   // osprey::load_model registers them itself
// A model saved after quantize(model, "float8") loads (load_model) and trains on, and its folder
// is a model description that `osprey train --model DIR` trains; an int8 one only predicts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "osprey/nn/layer.h"
#include "osprey/precision/float8.h"

namespace osprey::quant {

struct QuantizeOptions {
  // Only the layers with these names are quantized (each must exist and be quantizable);
  // empty: every quantizable layer.
  std::vector<std::string> layers{};
  // Mode "float8": the amax history length and margin of every swapped layer.
  precision::DelayedScaling float8{};
  // Mode "int8": fold each MaxPooling2D that directly follows a quantized Conv2D into it (the
  // pooled output is the same; the unpooled float32 tensor is never written). false keeps the
  // pooling layers.
  bool fold_max_pooling = true;
};

// The modes quantize() accepts, in the order error messages list them.
const std::vector<std::string>& quantization_modes();

// Swaps the model's layers in place and returns the weight paths of the quantized kernels.
// ValueError for an unknown mode, an unbuilt model, a model without any layer the mode
// quantizes, a named layer that is missing, of another kind or already quantized (in any mode);
// NotImplementedError for a container that cannot swap layers (a Functional model, for now).
std::vector<std::string> quantize(nn::Layer& model, std::string_view mode,
                                  const QuantizeOptions& options = {});

// The names of the model's int8-quantized layers (QuantizedDense, QuantizedConv2D,
// QuantizedEmbedding) at any depth, in order. They are for inference only: their kernels are int8
// with fixed scales, so there is nothing to train; Model::fit and `osprey train` refuse a model
// that holds any (train the float32 model, then quantize it again). Float8 layers train.
std::vector<std::string> int8_layers(const nn::Layer& model);

// Registers QuantizedDense, QuantizedConv2D, QuantizedEmbedding, Float8Dense and Float8Conv2D
// with the layer registry (idempotent), so load_model() can rebuild saved quantized models.
void register_layers();

}  // namespace osprey::quant
