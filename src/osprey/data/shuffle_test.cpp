#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "osprey/core/rng.h"
#include "osprey/data/dataset.h"
#include "osprey/data/files_test.h"

namespace osprey::data {
namespace {

using testing::values;

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ShuffleTest, SameSeedGivesTheSameOrder) {
  const auto a = values(Dataset::range(1000).shuffle(1000, 42));
  const auto b = values(Dataset::range(1000).shuffle(1000, 42));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, iota(1000));
  EXPECT_NE(a, values(Dataset::range(1000).shuffle(1000, 43)));
}

TEST(ShuffleTest, EveryEpochHasANewOrderDerivedFromSeedAndEpoch) {
  Dataset ds = Dataset::range(500).shuffle(500, 7);
  const auto e0 = values(ds);
  const auto e1 = values(ds);
  const auto e2 = values(ds);
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
  // Deterministic: a fresh dataset with the same seed replays the same epochs.
  Dataset again = Dataset::range(500).shuffle(500, 7);
  EXPECT_EQ(values(again), e0);
  EXPECT_EQ(values(again), e1);
  EXPECT_EQ(values(again.iterator(2)), e2);
}

TEST(ShuffleTest, EveryElementAppearsExactlyOncePerEpoch) {
  for (int64_t buffer : {1, 7, 100, 1000, 5000}) {
    Dataset ds = Dataset::range(1000).shuffle(buffer, 11);
    for (int epoch = 0; epoch < 2; ++epoch)
      EXPECT_EQ(sorted(values(ds)), iota(1000)) << "buffer " << buffer;
  }
}

TEST(ShuffleTest, ReshuffleEachIterationFalseRepeatsTheFirstOrder) {
  Dataset ds = Dataset::range(200).shuffle(200, {.seed = 5, .reshuffle_each_iteration = false});
  EXPECT_EQ(values(ds), values(ds));
}

TEST(ShuffleTest, BufferOfOneKeepsTheInputOrder) {
  EXPECT_EQ(values(Dataset::range(50).shuffle(1, 3)), iota(50));
}

TEST(ShuffleTest, SmallBufferOnlyMixesNeighbours) {
  // With a buffer of k, the element yielded at position p was among the first p + k inputs,
  // and the first output comes from the first k elements.
  constexpr int64_t k = 10;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    const auto v = values(Dataset::range(1000).shuffle(k, seed));
    for (size_t p = 0; p < v.size(); ++p)
      ASSERT_LT(v[p], static_cast<int64_t>(p) + k) << "position " << p;
    EXPECT_NE(v, iota(1000));
  }
}

TEST(ShuffleTest, FullBufferIsRoughlyUniform) {
  // Position of element 0 over many epochs of a 10-element shuffle: each slot about 10%.
  Dataset ds = Dataset::range(10).shuffle(10, 123);
  std::vector<int> where(10, 0);
  constexpr int kEpochs = 4000;
  for (int e = 0; e < kEpochs; ++e) {
    const auto v = values(ds);
    where[static_cast<size_t>(std::find(v.begin(), v.end(), 0) - v.begin())]++;
  }
  for (int c : where) EXPECT_NEAR(c, kEpochs / 10, 80);  // about 5 standard deviations
}

TEST(ShuffleTest, UnseededShuffleIsReproducibleUnderTheGlobalSeed) {
  set_global_seed(2024);
  const auto a = values(Dataset::range(100).shuffle(100));
  set_global_seed(2024);
  const auto b = values(Dataset::range(100).shuffle(100));
  EXPECT_EQ(a, b);
}

TEST(ShuffleTest, RepeatGivesEachRepetitionItsOwnOrder) {
  const auto v = values(Dataset::range(100).shuffle(100, 1).repeat(2));
  ASSERT_EQ(v.size(), 200u);
  const std::vector<int64_t> first(v.begin(), v.begin() + 100), second(v.begin() + 100, v.end());
  EXPECT_NE(first, second);
  EXPECT_EQ(sorted(first), iota(100));
  EXPECT_EQ(sorted(second), iota(100));
}

TEST(ShuffleTest, RejectsANonPositiveBuffer) {
  EXPECT_THROW(Dataset::range(3).shuffle(0, 1), ValueError);
}

}  // namespace
}  // namespace osprey::data
