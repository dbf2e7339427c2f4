#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "osprey/data/dataset.h"
#include "osprey/data/files_test.h"
#include "osprey/tensor/factory.h"

namespace osprey::data {
namespace {

using testing::values;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A dataset whose elements take `delay` each to produce, counting how many were produced;
// with throw_at >= 0 it throws IoError instead of producing element throw_at.
Dataset slow_source(std::shared_ptr<std::atomic<int>> produced, milliseconds delay, int64_t count,
                    int64_t throw_at = -1) {
  return Dataset::from_generator([=](uint64_t) {
    return Generator([=, i = int64_t{0}]() mutable -> std::optional<Element> {
      if (count >= 0 && i >= count) return std::nullopt;
      if (i == throw_at) throw IoError("disk on fire at element " + std::to_string(i));
      std::this_thread::sleep_for(delay);
      ++*produced;
      return Element{from_vector<int64_t>({i++})};
    });
  });
}

TEST(PrefetchTest, YieldsTheSameElementsInOrder) {
  Dataset ds = Dataset::range(1000).batch(7).prefetch(3).unbatch();
  EXPECT_EQ(values(ds), values(Dataset::range(1000)));
  EXPECT_EQ(values(Dataset::range(1000).prefetch(kAutotune)), values(Dataset::range(1000)));
  EXPECT_EQ(Dataset::range(10).prefetch(2).cardinality(), 10);
}

TEST(PrefetchTest, ProducerOverlapsWithTheConsumer) {
  // 10 elements of 15 ms to produce and 15 ms to consume: about 300 ms one after the other,
  // about 165 ms overlapped.
  constexpr int64_t n = 10;
  const milliseconds step(15);
  auto produced = std::make_shared<std::atomic<int>>(0);
  auto run = [&](const Dataset& ds) {
    const auto t0 = Clock::now();
    for (auto& e : ds) {
      (void)e;
      std::this_thread::sleep_for(step);
    }
    return std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
  };
  const auto serial = run(slow_source(produced, step, n));
  const auto overlapped = run(slow_source(produced, step, n).prefetch(2));
  EXPECT_EQ(produced->load(), 2 * n);
  EXPECT_GE(serial.count(), 2 * n * step.count());
  EXPECT_LT(overlapped.count(), serial.count() * 3 / 4) << "serial " << serial.count() << " ms";
}

TEST(PrefetchTest, ProducerRunsAheadByTheBufferSizeOnly) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  Dataset ds = slow_source(produced, milliseconds(0), -1).prefetch(4);
  auto it = ds.iterator();
  ASSERT_TRUE(it.next());
  std::this_thread::sleep_for(milliseconds(50));
  // One consumed, four buffered, and at most one in the producer's hands.
  EXPECT_GE(produced->load(), 5);
  EXPECT_LE(produced->load(), 6);
}

TEST(PrefetchTest, ProducerErrorIsRethrownInTheConsumerAfterEarlierElements) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  Dataset ds = slow_source(produced, milliseconds(0), 100, /*throw_at=*/5).prefetch(3);
  auto it = ds.iterator();
  for (int64_t i = 0; i < 5; ++i) {
    auto e = it.next();
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)[0].item(), static_cast<double>(i));
  }
  try {
    it.next();
    FAIL() << "expected the producer's IoError";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "disk on fire at element 5");
  }
  EXPECT_FALSE(it.next().has_value());  // after the error: the end
}

TEST(PrefetchTest, ErrorsPropagateThroughNestedPrefetches) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  Dataset ds =
      slow_source(produced, milliseconds(0), 100, 2).prefetch(2).batch(2).prefetch(kAutotune);
  auto it = ds.iterator();
  EXPECT_TRUE(it.next());
  EXPECT_THROW(it.next(), IoError);
}

TEST(PrefetchTest, DestroyingTheIteratorMidEpochStopsTheProducer) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  Dataset ds = slow_source(produced, milliseconds(1), -1)
                   .prefetch(8)
                   .map([](Element e) { return e; })
                   .prefetch(2);
  const auto t0 = Clock::now();
  {
    auto it = ds.iterator();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(it.next());
  }
  EXPECT_LT(Clock::now() - t0, milliseconds(2000));
  const int after = produced->load();
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(produced->load(), after) << "a producer outlived its iterator";
  EXPECT_LE(after, 3 + 2 + 8 + 3);
}

TEST(PrefetchTest, AutotuneGrowsTheBufferWhenTheConsumerWaits) {
  // A producer slower than the consumer: the consumer keeps finding the buffer empty, so it
  // grows; afterwards the producer has run further ahead than the starting buffer of 2.
  auto produced = std::make_shared<std::atomic<int>>(0);
  Dataset ds = slow_source(produced, milliseconds(2), -1).prefetch(kAutotune);
  auto it = ds.iterator();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(it.next());
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_GT(produced->load() - 10, 2);
  EXPECT_LE(produced->load() - 10, 17);
}

TEST(PrefetchTest, RejectsAZeroBuffer) { EXPECT_THROW(Dataset::range(3).prefetch(0), ValueError); }

TEST(PrefetchTest, RangeForOverAPrefetchedDatasetEndsCleanlyOnBreak) {
  Dataset ds = Dataset::range(1000000).prefetch(4);
  int n = 0;
  for (auto& e : ds) {
    (void)e;
    if (++n == 10) break;
  }
  EXPECT_EQ(n, 10);
}

}  // namespace
}  // namespace osprey::data
