// The config field every int8 layer of quant/ writes and checks on load, so a saved model from a
// future mode ("int4", ...) fails with a clear error rather than loading wrong weights.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "osprey/core/error.h"

namespace osprey::quant::detail {

inline void check_int8_mode(const nlohmann::json& config, const char* layer) {
  const std::string mode = config.value("quantization_mode", std::string("int8"));
  OSPREY_CHECK(mode == "int8", "{}: quantization_mode must be \"int8\". Received: \"{}\"", layer,
               mode);
}

}  // namespace osprey::quant::detail
