#include "osprey/distribute/ps/variable_sharding.h"

#include <gtest/gtest.h>

#include "osprey/core/error.h"

namespace osprey::distribute::ps {
namespace {

std::vector<std::pair<std::string, Shape>> mlp() {
  return {{"dense/kernel", Shape{784, 512}},
          {"dense/bias", Shape{512}},
          {"dense_1/kernel", Shape{512, 10}},
          {"dense_1/bias", Shape{10}}};
}

TEST(VariableShardingTest, RoundRobinPlacesVariablesInPathOrder) {
  const ShardingPlan plan = plan_sharding(mlp(), 2);
  ASSERT_EQ(plan.variables.size(), 4u);
  EXPECT_EQ(plan.variables[0].parts[0].ps, 0);
  EXPECT_EQ(plan.variables[1].parts[0].ps, 1);
  EXPECT_EQ(plan.variables[2].parts[0].ps, 0);
  EXPECT_EQ(plan.variables[3].parts[0].ps, 1);
  EXPECT_EQ(plan.variables[0].parts[0].name, "dense/kernel");
  // ps 0 holds both kernels: 784*512 + 512*10 floats.
  EXPECT_EQ(plan.bytes_per_ps()[0], (784 * 512 + 512 * 10) * 4);
}

TEST(VariableShardingTest, BalancedPlacementPutsTheLargestAloneAndTheRestElsewhere) {
  const ShardingPlan plan = plan_sharding(mlp(), 2, {.placement = Placement::balanced});
  EXPECT_EQ(plan.variables[0].parts[0].ps, 0);  // 401,408 floats: ps 0
  EXPECT_EQ(plan.variables[2].parts[0].ps, 1);  // the rest go to the lighter ps 1
  EXPECT_EQ(plan.variables[1].parts[0].ps, 1);
  EXPECT_EQ(plan.variables[3].parts[0].ps, 1);
}

TEST(VariableShardingTest, FixedShardsSplitsRowsEvenlyFirstPartsLonger) {
  const ShardingPlan plan =
      plan_sharding({{"k", Shape{7, 3}}}, 2, {.partitioner = fixed_shards_partitioner(3)});
  const auto& parts = plan.variables[0].parts;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].name, "k/part_0");
  EXPECT_EQ(parts[0].row_begin, 0);
  EXPECT_EQ(parts[0].row_end, 3);
  EXPECT_EQ(parts[1].row_begin, 3);
  EXPECT_EQ(parts[1].row_end, 5);
  EXPECT_EQ(parts[2].row_end, 7);
  EXPECT_EQ(parts[2].shape, (Shape{2, 3}));
  EXPECT_EQ(parts[0].ps, 0);
  EXPECT_EQ(parts[1].ps, 1);
  EXPECT_EQ(parts[2].ps, 0);
  EXPECT_EQ(plan.describe(), "k [7, 3] -> ps 0 rows 0-2, ps 1 rows 3-4, ps 0 rows 5-6\n");
}

TEST(VariableShardingTest, NeverSplitsIntoMorePartsThanRows) {
  const ShardingPlan plan = plan_sharding({{"b", Shape{2}}, {"s", Shape{}}}, 4,
                                          {.partitioner = fixed_shards_partitioner(4)});
  EXPECT_EQ(plan.variables[0].parts.size(), 2u);
  EXPECT_EQ(plan.variables[1].parts.size(), 1u);
  EXPECT_EQ(plan.variables[1].parts[0].name, "s");
}

TEST(VariableShardingTest, MinAndMaxSizePartitionersFollowTheirBounds) {
  // 784x512 float32 = 1,605,632 bytes.
  const Shape kernel{784, 512};
  EXPECT_EQ(min_size_partitioner(256 << 10, 4)("k", kernel), 4);
  EXPECT_EQ(min_size_partitioner(1 << 20, 4)("k", kernel), 1);
  EXPECT_EQ(max_size_partitioner(1 << 20)("k", kernel), 2);
  EXPECT_EQ(max_size_partitioner(100 << 10, 3)("k", kernel), 3);
}

TEST(VariableShardingTest, RefusesDuplicatePathsAndBadCounts) {
  try {
    plan_sharding({{"a", Shape{2}}, {"a", Shape{3}}}, 1);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "plan_sharding: two variables share the path 'a'; parameter servers key "
                 "variables by path");
  }
  EXPECT_THROW(plan_sharding(mlp(), 0), ValueError);
  EXPECT_THROW(fixed_shards_partitioner(0), ValueError);
}

}  // namespace
}  // namespace osprey::distribute::ps
