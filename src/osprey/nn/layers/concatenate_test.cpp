#include "osprey/nn/layers/concatenate.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

TEST(ConcatenateTest, JoinsAlongTheAxis) {
  const Variable a(from_vector<double>({1, 2, 3, 4}, {2, 2})),
      b(from_vector<double>({5, 6}, {2, 1}));
  const Variable y = layers::Concatenate()(std::vector<Variable>{a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.value().to_vector<double>(), (std::vector<double>{1, 2, 5, 3, 4, 6}));
  // Keras: Concatenate(axis=1) on [None, 4, 8] and [None, 6, 8] -> [None, 10, 8].
  EXPECT_EQ(layers::Concatenate(1)->compute_output_shape({{-1, 4, 8}, {-1, 6, 8}}),
            (Shape{-1, 10, 8}));
}

TEST(ConcatenateTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::Concatenate(-1, {.dtype = "float64"}); },
                                  std::vector<Shape>{{2, 3}, {2, 2}, {2, 1}},
                                  {.output_shape = {2, 6}, .params = 0});
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::Concatenate(1, {.dtype = "float64"}); },
                                  std::vector<Shape>{{2, 1, 3}, {2, 2, 3}},
                                  {.output_shape = {2, 3, 3}, .params = 0});
}

TEST(ConcatenateTest, ConfigHasTheAxis) {
  const nlohmann::json c = layers::Concatenate(2, {.name = "cat"})->get_config();
  EXPECT_EQ(c["axis"], 2);
  EXPECT_EQ(c["name"], "cat");
}

TEST(ConcatenateTest, RejectsMismatchedShapes) {
  auto cat = layers::Concatenate(-1, {.name = "cat"});
  EXPECT_EQ(test::value_error([&] {
              cat(std::vector<Variable>{Variable(zeros({2, 3, 4})), Variable(zeros({2, 5, 4}))});
            }),
            "cat: inputs must match in every axis but the concatenation axis -1. Received: [2, 3, "
            "4] (input 0) and "
            "[2, 5, 4] (input 1)");
  EXPECT_EQ(test::value_error([&] {
              cat->compute_output_shape({{2, 3}, {2, 3, 1}});
            }),
            "cat: inputs must match in every axis but the concatenation axis -1. Received: [2, 3] "
            "(input 0) and "
            "[2, 3, 1] (input 1)");
  EXPECT_EQ(test::value_error([] {
              layers::Concatenate(0, {.name = "cat0"})->compute_output_shape({{2, 3}, {2, 3}});
            }),
            "cat0: axis 0 is out of range for inputs of shape [2, 3] (expected a non-batch axis)");
}

}  // namespace
}  // namespace osprey::nn
