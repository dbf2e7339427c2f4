#include "osprey/autograd/ops/pool.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(PoolTest, MaxAndAvgPoolGradients) {
  const std::vector<Pool2dOptions> options{
      {},
      {.pool_size = {3, 3}, .strides = {1, 1}},
      {.pool_size = {2, 2}, .padding = "same"},
      {.pool_size = {2, 3}, .strides = {1, 2}, .data_format = "NCHW"},
      {.pool_size = {2, 2}, .strides = {1, 1}, .padding = "explicit", .pads = {1, 0, 1, 1}},
  };
  uint64_t seed = 1;
  for (size_t i = 0; i < options.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const Pool2dOptions o = options[i];
    OSPREY_EXPECT_GRADCHECK([o](const Vars& v) { return max_pool2d(v[0], o); },
                            (Vars{input({2, 5, 5, 2}, seed++, true)}));
    OSPREY_EXPECT_GRADCHECK([o](const Vars& v) { return avg_pool2d(v[0], o); },
                            (Vars{input({2, 5, 5, 2}, seed++)}));
  }
}

TEST(PoolTest, GlobalPoolGradients) {
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return global_average_pool2d(v[0]); },
                          (Vars{input({2, 3, 3, 2}, 20, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return global_average_pool2d(v[0], "NCHW", true); },
                          (Vars{input({2, 2, 3, 3}, 21)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return global_max_pool2d(v[0]); },
                          (Vars{input({1, 3, 3, 2}, 22)}));
}

TEST(PoolTest, ForwardValuesAndBackwardRouting) {
  // One 4x4 channel (NHWC [1, 4, 4, 1]) holding 0..15.
  Variable x(arange(0, 16, 1, {DType::float64}).reshape({1, 4, 4, 1}), true);
  Variable y = max_pool2d(x);
  EXPECT_EQ(values(y), (std::vector<double>{5, 7, 13, 15}));
  sum(y).backward();
  EXPECT_EQ(values(x.grad()),
            (std::vector<double>{0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1}));
  EXPECT_EQ(values(avg_pool2d(x)), (std::vector<double>{2.5, 4.5, 10.5, 12.5}));
  // "same" padding: the edge windows average only their real elements.
  const std::vector<double> same =
      values(avg_pool2d(x, {.pool_size = {3, 3}, .strides = {1, 1}, .padding = "same"}));
  ASSERT_EQ(same.size(), 16u);
  EXPECT_DOUBLE_EQ(same[0], 2.5);  // {0, 1, 4, 5}
  EXPECT_DOUBLE_EQ(same[5], 5.0);  // the full window around 5
  EXPECT_EQ(values(global_average_pool2d(x)), (std::vector<double>{7.5}));
}

TEST(PoolTest, BadInputsAreErrors) {
  expect_error<ValueError>(
      [] {
        max_pool2d(input({4, 4, 2}, 1));
      },
      {"max_pool2d", "4-D", "[4, 4, 2]"});
  expect_error<ValueError>(
      [] {
        global_average_pool2d(input({2, 4, 4, 2}, 1), "HWNC");
      },
      {"global_average_pool2d", "data_format", "'HWNC'"});
}

}  // namespace
}  // namespace osprey::autograd
