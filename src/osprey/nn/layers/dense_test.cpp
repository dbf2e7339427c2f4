#include "osprey/nn/layers/dense.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

TEST(DenseTest, KernelShapeIsInputDimByUnits) {
  // Keras: Dense(512) on 784 features -> 401920 params.
  auto dense = layers::Dense(512, "relu");
  const Variable y = dense(Variable(zeros({2, 784})));
  EXPECT_EQ(y.shape(), (Shape{2, 512}));
  EXPECT_EQ(dense->kernel().shape(), (Shape{784, 512}));
  EXPECT_EQ(dense->count_params(), 401920);
  EXPECT_EQ(dense->compute_output_shape({{-1, 10, 784}}), (Shape{-1, 10, 512}));
}

TEST(DenseTest, ComputesActivationOfXTimesKernelPlusBias) {
  auto dense = layers::Dense(2, "relu", {.dtype = "float64"});
  dense->build({{1, 3}});
  test::set_weight(*dense, "kernel", from_vector<double>({1, -1, 2, 0, 0, 1}, {3, 2}));
  test::set_weight(*dense, "bias", from_vector<double>({0.5, -10}, {2}));
  // [1, 2, 3] · kernel = [5, 2]; + bias = [5.5, -8]; relu -> [5.5, 0].
  EXPECT_EQ(dense(Variable(from_vector<double>({1, 2, 3}, {1, 3}))).value().to_vector<double>(),
            (std::vector<double>{5.5, 0.0}));
}

TEST(DenseTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::Dense(3, "tanh", {.dtype = "float64"}); }, Shape{2, 4},
      {.output_shape = {2, 3}, .params = 15, .weights = {{"kernel", {4, 3}}, {"bias", {3}}}});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Dense(5, "softmax",
                             {.use_bias = false, .kernel_regularizer = Regularizer::l1(0.1)});
      },
      Shape{2, 3, 4}, {.output_shape = {2, 3, 5}, .params = 20, .weights = {{"kernel", {4, 5}}}});
}

TEST(DenseTest, ConfigUsesKerasFieldNames) {
  const nlohmann::json c = layers::Dense(7, "sigmoid", {.name = "out"})->get_config();
  EXPECT_EQ(c["name"], "out");
  EXPECT_EQ(c["units"], 7);
  EXPECT_EQ(c["activation"], "sigmoid");
  EXPECT_EQ(c["use_bias"], true);
  EXPECT_EQ(c["trainable"], true);
  EXPECT_EQ(c["dtype"], "float32");
  EXPECT_EQ(c["kernel_initializer"]["class_name"], "GlorotUniform");
  EXPECT_EQ(c["bias_initializer"]["class_name"], "Zeros");
}

TEST(DenseTest, RejectsBadArguments) {
  EXPECT_EQ(test::value_error([] { layers::Dense(0); }),
            "Dense: units must be positive. Received: units=0");
  auto dense = layers::Dense(4, {}, {.name = "d"});
  dense(Variable(zeros({2, 3})));
  EXPECT_EQ(test::value_error([&] {
              dense(Variable(zeros({2, 5})));
            }),
            "d: expected inputs with 3 features on the last axis. Received: [2, 5]");
}

}  // namespace
}  // namespace osprey::nn
