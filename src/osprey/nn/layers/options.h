// Shared plumbing for layer option structs: each carries name/dtype/trainable flat (so
// designated initializers read {.dtype = "float32"}), converted here to LayerOptions; and the
// config fields every layer with a kernel and a bias shares.
#pragma once

#include <nlohmann/json.hpp>

#include "osprey/nn/initializers.h"
#include "osprey/nn/layer.h"
#include "osprey/nn/regularizer.h"

namespace osprey::nn {

template <class Options>
LayerOptions base_options(const Options& o) {
  return {o.name, o.dtype, o.trainable};
}

template <class Options>
void read_base_options(const nlohmann::json& c, Options& o) {
  o.name = c.value("name", std::string());
  o.dtype = c.value("dtype", std::string());
  o.trainable = c.value("trainable", true);
}

// The kernel and bias fields of a layer's config (use_bias, the initializers and regularizers) as
// Keras names them: one place for Dense, Conv1D and Conv2D to write and read them.
template <class Options>
void write_kernel_bias_config(nlohmann::json& c, const Options& o) {
  c["use_bias"] = o.use_bias;
  c["kernel_initializer"] = o.kernel_initializer.to_json();
  c["bias_initializer"] = o.bias_initializer.to_json();
  c["kernel_regularizer"] = o.kernel_regularizer.to_json();
  c["bias_regularizer"] = o.bias_regularizer.to_json();
}

template <class Options>
void read_kernel_bias_config(const nlohmann::json& c, Options& o) {
  o.use_bias = c.value("use_bias", true);
  if (c.contains("kernel_initializer"))
    o.kernel_initializer = initializers::from_json(c["kernel_initializer"]);
  if (c.contains("bias_initializer"))
    o.bias_initializer = initializers::from_json(c["bias_initializer"]);
  o.kernel_regularizer = Regularizer::from_json(c.value("kernel_regularizer", nlohmann::json()));
  o.bias_regularizer = Regularizer::from_json(c.value("bias_regularizer", nlohmann::json()));
}

}  // namespace osprey::nn
