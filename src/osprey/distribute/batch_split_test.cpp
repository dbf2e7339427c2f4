// The helpers around the strategies: batch splitting, global batch size, learning-rate
// scaling, virtual device names and gradient bucket assignment.
#include "osprey/distribute/batch_split.h"

#include <gtest/gtest.h>

#include <string>

#include "osprey/distribute/data_parallel/gradient_reducer.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/learning_rate_scaling.h"
#include "osprey/tensor/factory.h"

namespace osprey::distribute {
namespace {

TEST(HelpersTest, GlobalBatchSize) {
  EXPECT_EQ(global_batch_size(64, 4), 256);
  EXPECT_EQ(global_batch_size(3, 1), 3);
  EXPECT_THROW(global_batch_size(0, 4), ValueError);
  EXPECT_THROW(global_batch_size(8, 0), ValueError);
}

TEST(HelpersTest, SplitBatchGivesConsecutiveEqualShards) {
  Tensor x = Tensor::empty({6, 2}, {DType::float32});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>(i);
  Tensor y = Tensor::empty({6}, {DType::float32});
  for (int i = 0; i < 6; ++i) y.data<float>()[i] = static_cast<float>(10 * i);
  const Shards s = split_batch(x, y, 3, "test");
  ASSERT_EQ(s.x.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(s.x[static_cast<size_t>(r)].shape(), Shape({2, 2}));
    EXPECT_EQ(s.x[static_cast<size_t>(r)].data<float>()[0], static_cast<float>(4 * r));  // row 2r
    EXPECT_EQ(s.y[static_cast<size_t>(r)].data<float>()[1], static_cast<float>(10 * (2 * r + 1)));
  }
  try {
    split_batch(x, y, 4, "MirroredStrategy");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the global batch size 6 is not divisible by the 4 replicas in sync"),
              std::string::npos)
        << e.what();
  }
}

TEST(HelpersTest, LearningRateScalingByReplicaCount) {
  const MirroredStrategy s(virtual_devices(4));
  EXPECT_DOUBLE_EQ(scaled_learning_rate(0.1, s), 0.4);
  EXPECT_DOUBLE_EQ(scaled_learning_rate(0.1, s, "sqrt"), 0.2);
  EXPECT_THROW(scaled_learning_rate(0.1, s, "cubic"), ValueError);
  const optim::LearningRate lr = warmup_to_scaled_learning_rate(0.1, s, 100, "linear");
  EXPECT_DOUBLE_EQ(lr(0), 0.1);
  EXPECT_NEAR(lr(50), 0.25, 1e-12);  // halfway from 0.1 to 0.4
  EXPECT_DOUBLE_EQ(lr(1000), 0.4);
}

TEST(HelpersTest, BucketsFollowReverseCreationOrderAndTheByteLimit) {
  // Sizes in bytes: v0 40, v1 400, v2 8, v3 100.
  std::vector<autograd::Variable> vars;
  for (int64_t n : {10, 100, 2, 25}) vars.emplace_back(Tensor::empty({n}, {DType::float32}), true);
  using B = std::vector<std::vector<size_t>>;
  EXPECT_EQ(assign_buckets(vars, kDefaultBucketBytes, kDefaultBucketBytes), (B{{3, 2, 1, 0}}));
  EXPECT_EQ(assign_buckets(vars, 108, 108), (B{{3, 2}, {1}, {0}}));  // v1 alone exceeds the limit
  EXPECT_EQ(assign_buckets(vars, 1, 1), (B{{3}, {2}, {1}, {0}}));
  EXPECT_EQ(kDefaultBucketBytes, 25 * 1024 * 1024);
  EXPECT_THROW(assign_buckets(vars, 0, 1), ValueError);
}

TEST(HelpersTest, VirtualDevices) {
  EXPECT_EQ(virtual_devices(3), (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2"}));
  EXPECT_EQ(MirroredStrategy(virtual_devices(3)).num_replicas_in_sync(), 3);
  EXPECT_THROW(virtual_devices(0), ValueError);
}

}  // namespace
}  // namespace osprey::distribute
