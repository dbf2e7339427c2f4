// Every built-in layer, and the table the layer registry starts from.
#pragma once

#include <utility>
#include <vector>

#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/dense.h"

namespace osprey::nn {

inline std::vector<std::pair<std::string, LayerFactory>> builtin_layer_factories() {
  return {
      {"Dense", &Dense::from_config},
  };
}

}  // namespace osprey::nn
