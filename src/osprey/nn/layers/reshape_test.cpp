#include "osprey/nn/layers/reshape.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

TEST(ReshapeTest, ReshapesEachSampleAndInfersOneSize) {
  // Keras: Reshape((7, 7, -1)) on [None, 196] -> [None, 7, 7, 4].
  auto r = layers::Reshape({7, 7, -1});
  EXPECT_EQ(r->compute_output_shape({{-1, 196}}), (Shape{-1, 7, 7, 4}));
  const Variable x(test::wave({2, 6}, 1));
  const Variable y = layers::Reshape({3, 2}, {.dtype = "float64"})(x);  // float64: no autocast
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(y.value().to_vector<double>(), x.value().to_vector<double>());
}

TEST(ReshapeTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Reshape({-1, 2}, {.dtype = "float64"});
      },
      Shape{3, 2, 3}, {.output_shape = {3, 3, 2}, .params = 0});
}

TEST(ReshapeTest, ConfigHasTheTargetShape) {
  const nlohmann::json c = layers::Reshape({4, -1}, {.name = "r"})->get_config();
  EXPECT_EQ(c["target_shape"], nlohmann::json::array({4, -1}));
  auto back = std::dynamic_pointer_cast<Reshape>(Reshape::from_config(c));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->target_shape(), (Shape{4, -1}));
}

TEST(ReshapeTest, RejectsIncompatibleSizes) {
  EXPECT_EQ(test::value_error([] {
              layers::Reshape({-1, -1});
            }),
            "Reshape: target_shape may contain at most one -1. Received: target_shape=[-1, -1]");
  EXPECT_EQ(test::value_error([] {
              layers::Reshape({0, 3});
            }),
            "Reshape: target_shape sizes must be positive or -1 (inferred). Received: "
            "target_shape=[0, 3]");
  auto r = layers::Reshape({5, 3}, {.name = "r"});
  EXPECT_EQ(test::value_error([&] {
              r(Variable(zeros({2, 3, 4})));
            }),
            "r: the total size must be unchanged: cannot reshape an input of shape [2, 3, 4] (12 "
            "values per sample) "
            "to target_shape [5, 3]");
  auto inferred = layers::Reshape({5, -1}, {.name = "r2"});
  EXPECT_EQ(test::value_error([&] {
              inferred->compute_output_shape({{-1, 12}});
            }),
            "r2: the total size must be unchanged: cannot reshape an input of shape [-1, 12] (12 "
            "values per sample) "
            "to target_shape [5, -1]");
}

}  // namespace
}  // namespace osprey::nn
