// Tests of the positional and element-wise transforms: take, skip, shard, repeat, map, filter,
// cache, and their cardinalities.
#include <gtest/gtest.h>

#include <atomic>

#include "osprey/data/dataset.h"
#include "osprey/data/files_test.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::data {
namespace {

using testing::values;
using V = std::vector<int64_t>;

int64_t as_int(const Element& e) { return static_cast<int64_t>(e[0].item()); }

TEST(SlicingTest, TakeAndSkipChooseByPosition) {
  Dataset ds = Dataset::range(10);
  EXPECT_EQ(values(ds.take(3)), (V{0, 1, 2}));
  EXPECT_EQ(values(ds.skip(7)), (V{7, 8, 9}));
  EXPECT_EQ(values(ds.skip(2).take(2)), (V{2, 3}));
  EXPECT_EQ(values(ds.take(-1)).size(), 10u);
  EXPECT_TRUE(values(ds.skip(-1)).empty());
  EXPECT_TRUE(values(ds.take(0)).empty());
  EXPECT_EQ(ds.take(3).cardinality(), 3);
  EXPECT_EQ(ds.take(30).cardinality(), 10);
  EXPECT_EQ(ds.skip(4).cardinality(), 6);
  EXPECT_EQ(ds.skip(40).cardinality(), 0);
  EXPECT_EQ(ds.repeat().take(25).cardinality(), 25);
}

TEST(SlicingTest, ShardTakesEveryNthElementFromIndex) {
  Dataset ds = Dataset::range(10);
  EXPECT_EQ(values(ds.shard(3, 0)), (V{0, 3, 6, 9}));
  EXPECT_EQ(values(ds.shard(3, 1)), (V{1, 4, 7}));
  EXPECT_EQ(values(ds.shard(3, 2)), (V{2, 5, 8}));
  EXPECT_EQ(ds.shard(3, 0).cardinality(), 4);
  EXPECT_EQ(ds.shard(3, 2).cardinality(), 3);
  EXPECT_EQ(values(ds.shard(20, 15)), V{});
  EXPECT_THROW(ds.shard(3, 3), ValueError);
  EXPECT_THROW(ds.shard(0, 0), ValueError);
}

TEST(SlicingTest, ShardsOfAShuffleWithOneSeedPartitionTheData) {
  Dataset ds = Dataset::range(100).shuffle(100, {.seed = 4, .reshuffle_each_iteration = false});
  V all;
  for (int64_t i = 0; i < 4; ++i) {
    const V part = values(ds.shard(4, i));
    EXPECT_EQ(part.size(), 25u);
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, values(Dataset::range(100)));
}

TEST(SlicingTest, RepeatRepeatsCountTimesOrForever) {
  Dataset ds = Dataset::range(3);
  EXPECT_EQ(values(ds.repeat(2)), (V{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(ds.repeat(2).cardinality(), 6);
  EXPECT_EQ(ds.repeat().cardinality(), kInfinite);
  EXPECT_EQ(values(ds.repeat().take(7)), (V{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_TRUE(values(ds.repeat(0)).empty());
  // An empty input repeated forever ends instead of spinning.
  EXPECT_TRUE(values(ds.take(0).repeat()).empty());
  EXPECT_EQ(ds.repeat().batch(2).cardinality(), kInfinite);
}

TEST(SlicingTest, MapTransformsEveryElement) {
  Dataset ds = Dataset::range(4).map([](Element e) { return Element{mul(e[0], 10.0), e[0]}; });
  EXPECT_EQ(ds.cardinality(), 4);
  EXPECT_EQ(values(ds, 0), (V{0, 10, 20, 30}));
  EXPECT_EQ(values(ds, 1), (V{0, 1, 2, 3}));
}

TEST(SlicingTest, SkippingAMappedDatasetDoesNotCallTheFunction) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Dataset ds = Dataset::range(1000).map([calls](Element e) {
    ++*calls;
    return e;
  });
  EXPECT_EQ(values(ds.skip(990)).size(), 10u);
  EXPECT_EQ(calls->load(), 10);
}

TEST(SlicingTest, FilterKeepsMatchingElementsAndMakesCardinalityUnknown) {
  Dataset ds = Dataset::range(10).filter([](const Element& e) { return as_int(e) % 3 == 0; });
  EXPECT_EQ(values(ds), (V{0, 3, 6, 9}));
  EXPECT_EQ(ds.cardinality(), kUnknown);
  EXPECT_EQ(ds.batch(2).cardinality(), kUnknown);
}

TEST(SlicingTest, CacheReadsUpstreamOnlyOnce) {
  auto reads = std::make_shared<std::atomic<int>>(0);
  Dataset ds = Dataset::range(5)
                   .map([reads](Element e) {
                     ++*reads;
                     return e;
                   })
                   .cache();
  EXPECT_EQ(values(ds), (V{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(ds), (V{0, 1, 2, 3, 4}));
  EXPECT_EQ(reads->load(), 5);
  EXPECT_EQ(ds.cardinality(), 5);
}

TEST(SlicingTest, CacheIgnoresAPartialPass) {
  auto reads = std::make_shared<std::atomic<int>>(0);
  Dataset ds = Dataset::range(5)
                   .map([reads](Element e) {
                     ++*reads;
                     return e;
                   })
                   .cache();
  {
    auto it = ds.iterator();
    it.next();
    it.next();
  }  // destroyed mid-pass: nothing cached
  EXPECT_EQ(values(ds).size(), 5u);
  EXPECT_EQ(values(ds).size(), 5u);
  EXPECT_EQ(reads->load(), 7);
}

TEST(SlicingTest, CacheFreezesAShuffleBeforeIt) {
  Dataset frozen = Dataset::range(50).shuffle(50, 3).cache();
  EXPECT_EQ(values(frozen), values(frozen));
  Dataset reshuffled = Dataset::range(50).cache().shuffle(50, 3);
  EXPECT_NE(values(reshuffled), values(reshuffled));
}

TEST(SlicingTest, GeneratorIsRestartedEveryEpochWithItsEpoch) {
  Dataset ds = Dataset::from_generator(
      [](uint64_t epoch) {
        return Generator([epoch, i = int64_t{0}]() mutable -> std::optional<Element> {
          if (i == 3) return std::nullopt;
          return Element{from_vector<int64_t>({static_cast<int64_t>(epoch) * 100 + i++})};
        });
      },
      3);
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(values(ds), (V{0, 1, 2}));
  EXPECT_EQ(values(ds), (V{100, 101, 102}));
}

}  // namespace
}  // namespace osprey::data
