#include "osprey/nn/layers/time_distributed.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/conv2d.h"
#include "osprey/nn/layers/dense.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

TEST(TimeDistributedTest, DenseOnEveryStepIsDenseOnEachStep) {
  auto dense = layers::Dense(3, {}, {.dtype = "float64"});
  auto td = layers::TimeDistributed(dense, {.dtype = "float64"});
  const Variable x(wave({2, 4, 5}, 1));
  const Variable y = td(x);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 3}));
  for (int64_t t = 0; t < 4; ++t) {
    const Variable step = dense(autograd::select(x, 1, t));  // the same layer, the same weights
    test::expect_values_near(autograd::select(y, 1, t).value().contiguous(),
                             step.value().to_vector<double>(), 1e-12);
  }
  EXPECT_EQ(td->compute_output_shape({{-1, 7, 5}}), (Shape{-1, 7, 3}));
}

TEST(TimeDistributedTest, Conv2DOnEveryFrame) {
  auto td = layers::TimeDistributed(layers::Conv2D(4, 3));
  const Variable frames(wave({2, 3, 8, 8, 1}, 2).to(DType::float32));
  EXPECT_EQ(td(frames).shape(), (Shape{2, 3, 6, 6, 4}));
  EXPECT_EQ(td->compute_output_shape({{-1, 3, 8, 8, 1}}), (Shape{-1, 3, 6, 6, 4}));
}

TEST(TimeDistributedTest, WeightsLiveUnderTheWrapperAndConfigsRoundTrip) {
  auto td = layers::TimeDistributed(layers::Dense(3, {}, {.name = "dense"}),
                                    {.name = "time_distributed"});
  td->build({{2, 4, 5}});
  std::vector<std::string> names;
  for (const Variable& v : td->variables()) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{"time_distributed/dense/kernel",
                                             "time_distributed/dense/bias"}));
  td->set_path_prefix("sequential");
  EXPECT_EQ(td->variables()[0].name(), "sequential/time_distributed/dense/kernel");
  const nlohmann::json c = td->get_config();
  EXPECT_EQ(c["layer"]["class_name"], "Dense");
  EXPECT_EQ(c["layer"]["config"]["units"], 3);
  const auto back = layer_from_config("TimeDistributed", c);
  EXPECT_EQ(back->get_config(), c);
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::TimeDistributed(layers::Dense(3, {}, {.dtype = "float64"}),
                                       {.dtype = "float64"});
      },
      Shape{2, 4, 5}, {.output_shape = {2, 4, 3}, .params = 5 * 3 + 3});
}

TEST(TimeDistributedTest, AnInputWithoutATimeAxisIsRefused) {
  auto td = layers::TimeDistributed(layers::Dense(3), {.name = "td"});
  EXPECT_EQ(test::value_error([&] {
              td(Variable(zeros({2, 5})));
            }),
            "td: expected an input of rank 3 or more [batch, timesteps, ...]. Received: [2, 5]");
  EXPECT_EQ(test::value_error([&] {
              td->compute_output_shape({{-1, 5}});
            }),
            "td: expected an input of rank 3 or more [batch, timesteps, ...]. Received: [-1, 5]");
  EXPECT_EQ(test::value_error([] { layers::TimeDistributed(nullptr, {.name = "td2"}); }),
            "td2: layer must not be null");
}

}  // namespace
}  // namespace osprey::nn
