#include "osprey/nn/layers/add.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

TEST(AddTest, SumsItsInputs) {
  auto add = layers::Add();
  const Variable a(from_vector<double>({1, 2}, {1, 2})), b(from_vector<double>({10, 20}, {1, 2}));
  const Variable c(from_vector<double>({100, 200}, {1, 2}));
  EXPECT_EQ(add(std::vector<Variable>{a, b, c}).value().to_vector<double>(),
            (std::vector<double>{111, 222}));
  EXPECT_EQ(add->compute_output_shape({{-1, 8}, {4, 8}}), (Shape{-1, 8}));
  EXPECT_EQ(add->count_params(), 0);
}

TEST(AddTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::Add({.dtype = "float64"}); },
                                  std::vector<Shape>{{2, 3, 4}, {2, 3, 4}},
                                  {.output_shape = {2, 3, 4}, .params = 0});
}

TEST(AddTest, RejectsDifferentShapesAndASingleInput) {
  auto add = layers::Add({.name = "add"});
  EXPECT_EQ(
      test::value_error([&] {
        add(std::vector<Variable>{Variable(zeros({2, 3})), Variable(zeros({2, 4}))});
      }),
      "add: inputs must all have the same shape. Received: [2, 3] (input 0) and [2, 4] (input 1)");
  EXPECT_EQ(test::value_error([&] {
              add->compute_output_shape({{2, 3}});
            }),
            "add: expected at least 2 inputs. Received: 1");
}

}  // namespace
}  // namespace osprey::nn
