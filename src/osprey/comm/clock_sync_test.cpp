#include "osprey/comm/clock_sync.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "osprey/comm/in_process.h"
#include "osprey/core/trace.h"

namespace osprey::comm {
namespace {

// A clock every thread shares that ticks on every read, seen by each thread shifted by its own
// skew: rank r's clock runs skew[r] microseconds from rank 0's.
std::atomic<int64_t> ticks{1000000};
thread_local int64_t skew = 0;
int64_t skewed_clock() { return ticks.fetch_add(7) + skew; }

void run_ranks(InProcessGroup& g, const std::function<void(Communicator&)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(g.size()));
  for (int r = 0; r < g.size(); ++r) threads.emplace_back([&, r] { body(g.rank(r)); });
  for (auto& t : threads) t.join();
}

TEST(ClockSyncTest, TheOffsetToRankZeroIsFoundWithinItsStatedUncertainty) {
  trace::set_clock_for_testing(&skewed_clock);
  const int64_t skews[3] = {0, -5000, 12000};
  ClockOffset found[3];
  InProcessGroup g(3);
  run_ranks(g, [&](Communicator& c) {
    skew = skews[c.rank()];
    found[c.rank()] = estimate_clock_offset(c, 4);
  });
  trace::set_clock_for_testing(nullptr);
  EXPECT_EQ(found[0].offset_us, 0);
  for (int r = 1; r < 3; ++r) {
    // Rank r's clock reads skew[r] more than rank 0's: rank 0's time is its own minus skew[r].
    EXPECT_GT(found[r].uncertainty_us, 0.0);
    EXPECT_LE(std::abs(static_cast<double>(found[r].offset_us + skews[r])),
              found[r].uncertainty_us + 1.0)
        << "rank " << r;
  }
}

TEST(ClockSyncTest, RankZeroGathersEveryRanksTextInRankOrder) {
  const std::vector<std::string> texts = {"{\"rank\": 0}", "",
                                          std::string("caf\xc3\xa9 \x01\xff", 8)};
  std::vector<std::vector<std::string>> got(3);
  InProcessGroup g(3);
  run_ranks(g, [&](Communicator& c) { got[c.rank()] = gather_strings(c, texts[c.rank()]); });
  EXPECT_EQ(got[0], texts);
  EXPECT_TRUE(got[1].empty());
  EXPECT_TRUE(got[2].empty());
}

TEST(ClockSyncTest, CollectivesRecordSpansWithBytesAndPeers) {
  trace::start();
  InProcessGroup g(2);
  run_ranks(g, [&](Communicator& c) {
    std::vector<float> v(10, 1.0F);
    c.all_reduce(v.data(), 10, ReduceOp::sum);
    if (c.rank() == 0) c.send(v.data(), 3, 1);
    if (c.rank() == 1) c.recv(v.data(), 3, 0);
  });
  const trace::Session s = trace::stop();
  int all_reduces = 0, recvs = 0;
  for (const trace::ThreadEvents& t : s.threads) {
    for (const trace::Event& e : t.events) {
      EXPECT_EQ(e.category, trace::Category::collective);
      if (e.name == "all_reduce") {
        ++all_reduces;
        EXPECT_NE(std::find(e.args.begin(), e.args.end(),
                            std::pair<std::string, std::string>("bytes", "40")),
                  e.args.end());
      }
      if (e.name == "recv") {
        ++recvs;
        EXPECT_NE(std::find(e.args.begin(), e.args.end(),
                            std::pair<std::string, std::string>("peer", "0")),
                  e.args.end());
      }
    }
  }
  EXPECT_EQ(all_reduces, 2);
  EXPECT_EQ(recvs, 1);
}

}  // namespace
}  // namespace osprey::comm
