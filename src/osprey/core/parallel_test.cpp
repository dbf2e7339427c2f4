// parallel_for: exact coverage, error propagation, serial nesting; num_chunks: deterministic.
#include "osprey/core/parallel.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "osprey/core/error.h"

namespace osprey {
namespace {

// Restores the thread count a test changed.
class ParallelTest : public testing::Test {
 protected:
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = num_threads();
};

TEST_F(ParallelTest, ParallelForCoversTheRangeExactlyOnceOnAnyThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    set_num_threads(threads);
    for (int64_t n : {0, 1, 5, 1000, 100003}) {
      for (int64_t grain : {0, 1, 7, 4096}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n) + 20);
        parallel_for(10, 10 + n, grain, [&](int64_t b, int64_t e) {
          ASSERT_LE(10, b);
          ASSERT_LT(b, e);
          ASSERT_LE(e, 10 + n);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n + 20; ++i) {
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), i >= 10 && i < 10 + n ? 1 : 0)
              << "threads=" << threads << " n=" << n << " grain=" << grain << " i=" << i;
        }
      }
    }
  }
}

TEST_F(ParallelTest, AnEmptyOrReversedRangeCallsNothing) {
  int calls = 0;
  parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  parallel_for(9, 3, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST_F(ParallelTest, AnExceptionInTheBodyReachesTheCallerWithItsType) {
  for (int threads : {1, 4}) {
    set_num_threads(threads);
    EXPECT_THROW(parallel_for(0, 100000, 10,
                              [](int64_t b, int64_t e) {
                                if (b <= 50000 && 50000 < e) throw ValueError("bad element 50000");
                              }),
                 ValueError);
    try {
      parallel_for(0, 100000, 10,
                   [](int64_t, int64_t) { throw std::runtime_error("every chunk"); });
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "every chunk");
    }
  }
}

TEST_F(ParallelTest, NestedParallelForRunsSeriallyInsideTheOuterBody) {
  set_num_threads(4);
  std::vector<std::atomic<int>> hits(64 * 64);
  std::atomic<int> nested_parallel{0};
  parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      parallel_for(0, 64, 1, [&](int64_t ib, int64_t ie) {
        if (ib != 0 || ie != 64) nested_parallel.fetch_add(1);  // split means not serial
        for (int64_t j = ib; j < ie; ++j) hits[static_cast<size_t>(i * 64 + j)].fetch_add(1);
      });
    }
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_EQ(nested_parallel.load(), 0);
}

TEST_F(ParallelTest, NumChunksDependsOnlyOnSizeAndGrain) {
  EXPECT_EQ(num_chunks(0, 10), 0);
  EXPECT_EQ(num_chunks(-5, 10), 0);
  EXPECT_EQ(num_chunks(1, 10), 1);
  EXPECT_EQ(num_chunks(10, 10), 1);
  EXPECT_EQ(num_chunks(11, 10), 2);
  EXPECT_EQ(num_chunks(7, 0), 7);  // grain below one counts as one
  for (int threads : {1, 2, 5}) {
    set_num_threads(threads);
    EXPECT_EQ(num_chunks(1000003, 4096), 245);
  }
  // The chunks partition [0, n) in order, none empty and none larger than the grain.
  const int64_t n = 1000003, grain = 4096, k = num_chunks(n, grain);
  EXPECT_EQ(chunk_begin(n, k, 0), 0);
  EXPECT_EQ(chunk_begin(n, k, k), n);
  for (int64_t c = 0; c < k; ++c) {
    const int64_t size = chunk_begin(n, k, c + 1) - chunk_begin(n, k, c);
    EXPECT_GT(size, 0);
    EXPECT_LE(size, grain);
  }
}

TEST_F(ParallelTest, SetNumThreadsRejectsZero) {
  EXPECT_THROW(set_num_threads(0), ValueError);
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
}

// How many distinct OpenMP threads a large parallel_for used on the calling thread.
int threads_used_by_parallel_for() {
  std::mutex m;
  std::set<int> ids;
  parallel_for(0, 1 << 16, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(m);
    ids.insert(omp_get_thread_num());
  });
  return static_cast<int>(ids.size());
}

TEST_F(ParallelTest, AThreadLimitAppliesToThatThreadOnlyAndToOpenMp) {
  set_num_threads(4);
  std::thread worker([] {
    set_thread_limit(1);  // a virtual device's share
    EXPECT_EQ(thread_limit(), 1);
    EXPECT_EQ(num_threads(), 1);
    EXPECT_EQ(omp_get_max_threads(), 1);  // what oneDNN reads on this thread
    EXPECT_EQ(threads_used_by_parallel_for(), 1);
    set_thread_limit(3);
    EXPECT_EQ(num_threads(), 3);
    EXPECT_EQ(threads_used_by_parallel_for(), 3);
  });
  worker.join();
  EXPECT_EQ(thread_limit(), 0);
  EXPECT_EQ(num_threads(), 4);
  EXPECT_EQ(threads_used_by_parallel_for(), 4);
}

TEST_F(ParallelTest, AThreadLimitGuardRestoresTheCountItFound) {
  set_num_threads(4);
  {
    ThreadLimitGuard outer(2);
    EXPECT_EQ(num_threads(), 2);
    {
      ThreadLimitGuard inner(1);
      EXPECT_EQ(num_threads(), 1);
      EXPECT_EQ(omp_get_max_threads(), 1);
    }
    EXPECT_EQ(num_threads(), 2);
    EXPECT_EQ(omp_get_max_threads(), 2);
    set_num_threads(3);  // the process-wide count changes; this thread keeps its limit
    EXPECT_EQ(num_threads(), 2);
  }
  EXPECT_EQ(num_threads(), 3);
  EXPECT_EQ(omp_get_max_threads(), 3);
  try {
    set_thread_limit(-1);
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "set_thread_limit: the limit must be at least 0 (0: none). Received: -1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey
