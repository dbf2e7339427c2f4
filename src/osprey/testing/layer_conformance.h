// The layer conformance check every built-in layer passes (Keras's run_layer_test): build from
// a factory, then output shape == compute_output_shape == expected, parameter counts, weight
// names, shapes and paths, a config round trip through the registry that reproduces the config
// and (with the weights copied) the output, one training step (finite gradients for every
// trainable weight; an SGD update changes the loss), and for float64 layers a finite-difference
// check of the input gradient. The testing library does not link GoogleTest, so the check returns
// a result; OSPREY_EXPECT_LAYER_CONFORMANCE asserts on it in a test.
//   OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::Dense(3, {}, {.dtype = "float64"}); },
//       Shape{2, 4}, {.output_shape = {2, 3}, .params = 15, .weights = {{"kernel", {4, 3}},
//       {"bias", {3}}}});
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/nn/layer.h"

namespace osprey::testing {

struct ConformanceExpectations {
  Shape output_shape{};                    // for the given input shape(s), batch included
  int64_t params = -1;                     // count_params(); -1: not checked
  int64_t non_trainable_params = 0;        // weights added with trainable=false (moving statistics)
  std::map<std::string, Shape> weights{};  // every own weight, by name (an empty map: none)
  // Makes input i (of the given shape) from a seed; the default is a standard normal of the
  // layer's compute dtype. Embedding passes integer indices here.
  std::function<Tensor(int i, const Shape& shape, uint64_t seed)> make_input{};
  // The same inputs give the same output in training mode (not Dropout): then the float64
  // gradcheck runs in training mode (batch statistics for BatchNormalization), else in inference.
  bool deterministic = true;
  bool gradcheck = true;  // for float64 layers with a floating input
  uint64_t seed = 1234;
};

struct ConformanceResult {
  bool ok = true;
  std::string message;  // every failed check, one per line
};

using LayerMaker = std::function<std::shared_ptr<nn::Layer>()>;

ConformanceResult check_layer_conformance(const LayerMaker& make,
                                          const std::vector<Shape>& input_shapes,
                                          const ConformanceExpectations& e);
ConformanceResult check_layer_conformance(const LayerMaker& make, const Shape& input_shape,
                                          const ConformanceExpectations& e);

}  // namespace osprey::testing

// In a GoogleTest test: fails with every failed check listed. Variadic, so arguments may hold
// commas (lambdas, braced shapes): OSPREY_EXPECT_LAYER_CONFORMANCE(make, shape, expectations).
#define OSPREY_EXPECT_LAYER_CONFORMANCE(...)                                         \
  do {                                                                               \
    const auto lc_result_ = ::osprey::testing::check_layer_conformance(__VA_ARGS__); \
    EXPECT_TRUE(lc_result_.ok) << lc_result_.message;                                \
  } while (0)
