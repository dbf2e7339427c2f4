#include "osprey/nn/layers/flatten.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

TEST(FlattenTest, KeepsTheBatchAxis) {
  // Keras: Flatten() on [None, 7, 7, 64] -> [None, 3136].
  auto flat = layers::Flatten();
  EXPECT_EQ(flat->compute_output_shape({{-1, 7, 7, 64}}), (Shape{-1, 3136}));
  EXPECT_EQ(flat(Variable(zeros({2, 3, 4}))).shape(), (Shape{2, 12}));
  EXPECT_EQ(flat(Variable(zeros({5}))).shape(), (Shape{5, 1}));
  EXPECT_EQ(flat->count_params(), 0);
}

TEST(FlattenTest, ChannelsFirstFlattensInChannelsLastOrder) {
  // x [1, C=2, H=1, W=3] = [[a0 a1 a2], [b0 b1 b2]] -> a0 b0 a1 b1 a2 b2, as Keras.
  const Variable x(from_vector<double>({0, 1, 2, 10, 11, 12}, {1, 2, 1, 3}));
  EXPECT_EQ(layers::Flatten()(x).value().to_vector<double>(),
            (std::vector<double>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(layers::Flatten({.data_format = "channels_first"})(x).value().to_vector<double>(),
            (std::vector<double>{0, 10, 1, 11, 2, 12}));
}

TEST(FlattenTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE([] { return layers::Flatten({.dtype = "float64"}); },
                                  Shape{2, 3, 4}, {.output_shape = {2, 12}, .params = 0});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::Flatten({.data_format = "channels_first", .dtype = "float64"}); },
      Shape{2, 3, 2, 2}, {.output_shape = {2, 12}, .params = 0});
}

TEST(FlattenTest, ConfigHasTheDataFormat) {
  EXPECT_EQ(layers::Flatten()->get_config()["data_format"], "channels_last");
  EXPECT_EQ(test::value_error([] { layers::Flatten({.data_format = "nchw"}); }),
            "Flatten: data_format must be 'channels_last' or 'channels_first'. Received: "
            "data_format='nchw'");
}

}  // namespace
}  // namespace osprey::nn
