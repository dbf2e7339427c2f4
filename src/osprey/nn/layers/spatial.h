// Shared plumbing for the spatial layers (Conv2D, the pooling layers): Keras's data_format
// spellings mapped to the kernels' "NHWC"/"NCHW", padding checks, and [h, w] pairs in configs.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "osprey/core/error.h"
#include "osprey/core/shape.h"

namespace osprey::nn::detail {

using Pair = std::array<int64_t, 2>;

// "channels_last" -> "NHWC", "channels_first" -> "NCHW"; ValueError naming the layer otherwise.
inline std::string kernel_data_format(const std::string& data_format, const std::string& layer) {
  if (data_format == "channels_last") return "NHWC";
  if (data_format == "channels_first") return "NCHW";
  OSPREY_THROW(
      ValueError,
      "{}: data_format must be 'channels_last' or 'channels_first'. Received: data_format='{}'",
      layer, data_format);
}

// The channel count of a 4-D convolution input in `data_format` ("channels_last" or
// "channels_first"), checked against `groups`; ValueError naming the layer and the shape.
inline int64_t conv_input_channels(const Shape& s, const std::string& data_format, int64_t groups,
                                   const std::string& layer) {
  const bool last = data_format == "channels_last";
  OSPREY_CHECK(s.ndim() == 4, "{}: expected a 4-D input {}. Received: {}", layer,
               last ? "[batch, height, width, channels]" : "[batch, channels, height, width]",
               s.to_string());
  const int64_t c = last ? s[3] : s[1];
  OSPREY_CHECK(c > 0 && c % groups == 0,
               "{}: input channels must be divisible by groups={}. Received: {} channels in {}",
               layer, groups, c, s.to_string());
  return c;
}

inline void check_padding(const std::string& padding, const std::string& layer) {
  OSPREY_CHECK(padding == "valid" || padding == "same",
               "{}: padding must be 'valid' or 'same'. Received: padding='{}'", layer, padding);
}

inline void check_positive_pair(const Pair& p, const char* what, const std::string& layer) {
  OSPREY_CHECK(p[0] > 0 && p[1] > 0, "{}: {} must be positive. Received: {}=[{}, {}]", layer, what,
               what, p[0], p[1]);
}

// Reads [h, w] (or a single int, as Keras accepts) from c[key]; fallback when absent or null.
inline Pair read_pair(const nlohmann::json& c, const char* key, Pair fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const nlohmann::json& v = c[key];
  if (v.is_number_integer()) return {v.get<int64_t>(), v.get<int64_t>()};
  OSPREY_CHECK(v.is_array() && v.size() == 2,
               "config field '{}' must be an int or a pair. Received: {}", key, v.dump());
  return {v[0].get<int64_t>(), v[1].get<int64_t>()};
}

inline nlohmann::json pair_json(const Pair& p) { return nlohmann::json::array({p[0], p[1]}); }

// Reads a 1-D layer's size from c[key]: an int, or the 1-tuple Keras writes ([3]); fallback when
// absent or null.
inline int64_t read_single(const nlohmann::json& c, const char* key, int64_t fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const nlohmann::json& v = c[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  OSPREY_CHECK(v.is_array() && v.size() == 1 && v[0].is_number_integer(),
               "config field '{}' must be an int or a list of one int. Received: {}", key,
               v.dump());
  return v[0].get<int64_t>();
}

// Runs an analytic shape function on a shape whose batch may be -1 (the kernels' resolvers
// want a real batch): batch 1 in, the original batch back out.
template <class F>
Shape with_batch(const Shape& input, F&& f) {
  Shape s = input;
  const bool symbolic = s.ndim() > 0 && s[0] < 0;
  if (symbolic) s[0] = 1;
  Shape out = f(s);
  if (symbolic && out.ndim() > 0) out[0] = -1;
  return out;
}

}  // namespace osprey::nn::detail
