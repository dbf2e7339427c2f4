// Shared plumbing for layer option structs: each carries name/dtype/trainable flat (so
// designated initializers read {.dtype = "float32"}), converted here to LayerOptions.
#pragma once

#include <nlohmann/json.hpp>

#include "osprey/nn/layer.h"

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

}  // namespace osprey::nn
