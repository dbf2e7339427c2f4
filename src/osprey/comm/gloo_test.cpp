// Gloo backend, ranks as threads of this process (each with its own GlooGroup: its own store
// connection, TCP device and sockets, as separate processes would have), on loopback.
#include "osprey/comm/gloo.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <thread>

#include "osprey/comm/in_process.h"
#include "osprey/comm/tcp_store.h"
#include "osprey/core/error.h"

namespace osprey::comm {
namespace {

using std::chrono::milliseconds;

// Runs body(group, rank) for every rank on its own thread; returns each rank's error ("" if none).
std::vector<std::string> run_gloo(int size, const std::function<void(GlooGroup&, int)>& body,
                                  milliseconds timeout = milliseconds(20000)) {
  const std::string rendezvous = "127.0.0.1:" + std::to_string(free_loopback_port());
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        GlooGroup group({.rank = r,
                         .size = size,
                         .rendezvous = rendezvous,
                         .hostname = "",
                         .timeout = timeout,
                         .check_calls = true});
        body(group, r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<float> values(int rank, int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i + 1) + 1.37f * rank - 0.5f;
  return v;
}

// What the in-process group computes for the same inputs (the reference every backend matches).
std::vector<std::vector<float>> in_process(int size, int n,
                                           const std::function<void(Communicator&, float*)>& call) {
  std::vector<std::vector<float>> out;
  out.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) out.push_back(values(r, n));
  InProcessGroup g(size);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] { call(g.rank(r), out[static_cast<size_t>(r)].data()); });
  for (auto& t : threads) t.join();
  return out;
}

TEST(GlooTest, AllReduceMatchesTheInProcessGroupOnEveryRank) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  constexpr int kSize = 3, kN = 1000;
  std::vector<std::vector<float>> got(kSize);
  const auto errors = run_gloo(kSize, [&](GlooGroup& g, int r) {
    auto c = g.make_communicator("grads");
    std::vector<float> v = values(r, kN);
    c->all_reduce(v.data(), kN, ReduceOp::mean);
    got[static_cast<size_t>(r)] = v;
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  const auto want =
      in_process(kSize, kN, [](Communicator& c, float* d) { c.all_reduce(d, kN, ReduceOp::mean); });
  for (int r = 0; r < kSize; ++r) {
    EXPECT_EQ(got[static_cast<size_t>(r)], got[0]) << "rank " << r << " differs from rank 0";
    // Gloo's ring adds in its own order (not rank order): the same bits on every rank, within
    // float rounding of the in-process sum.
    for (int i = 0; i < kN; ++i) {
      const float w = want[0][static_cast<size_t>(i)];
      EXPECT_NEAR(got[0][static_cast<size_t>(i)], w, 1e-6 * std::abs(w) + 1e-7);
    }
  }
}

TEST(GlooTest, Bf16AllReduceIsBitwiseTheBaseDefinition) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  constexpr int kSize = 3, kN = 1001;  // not divisible by the size: padded blocks
  std::vector<std::vector<float>> got(kSize);
  const auto errors = run_gloo(kSize, [&](GlooGroup& g, int r) {
    auto c = g.make_communicator("grads");
    std::vector<float> v = values(r, kN);
    c->all_reduce_bf16(v.data(), kN, ReduceOp::mean);
    got[static_cast<size_t>(r)] = v;
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  const auto want = in_process(
      kSize, kN, [](Communicator& c, float* d) { c.all_reduce_bf16(d, kN, ReduceOp::mean); });
  for (int r = 0; r < kSize; ++r) EXPECT_EQ(got[static_cast<size_t>(r)], want[0]) << "rank " << r;
}

TEST(GlooTest, GatherScatterBroadcastAndPointToPoint) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  constexpr int kSize = 2;
  const auto errors = run_gloo(kSize, [&](GlooGroup& g, int r) {
    auto c = g.make_communicator("misc");
    std::vector<float> mine = {static_cast<float>(r), 10.0f + r};
    std::vector<float> all(4);
    c->all_gather(mine.data(), all.data(), 2);
    EXPECT_EQ(all, (std::vector<float>{0, 10, 1, 11}));
    std::vector<float> send = {1.0f + r, 2.0f + r, 3.0f + r, 4.0f + r}, block(2);
    c->reduce_scatter(send.data(), block.data(), 2, ReduceOp::sum);
    EXPECT_EQ(block, r == 0 ? (std::vector<float>{3, 5}) : (std::vector<float>{7, 9}));
    std::vector<float> b = {static_cast<float>(r) + 5.0f};
    c->broadcast(b.data(), 1, 1);
    EXPECT_EQ(b[0], 6.0f);
    if (r == 0) {
      const std::vector<float> msg = {4.5f, 5.5f, 6.5f};
      c->send(msg.data(), 3, 1, 7);
    } else {
      std::vector<float> in(3);
      c->recv(in.data(), 3, 0, 7);
      EXPECT_EQ(in, (std::vector<float>{4.5f, 5.5f, 6.5f}));
    }
    c->barrier();
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST(GlooTest, ACountMismatchIsTheSameErrorOnEveryRank) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  const auto errors = run_gloo(2, [&](GlooGroup& g, int r) {
    auto c = g.make_communicator("grads");
    std::vector<float> v(12, 1.0f);
    c->all_reduce(v.data(), r == 0 ? 10 : 12, ReduceOp::sum);
  });
  for (const auto& e : errors)
    EXPECT_EQ(e, "Communicator::all_reduce: rank 0 passed 10 elements but rank 1 passed 12");
}

TEST(GlooTest, ARecvOfAnotherCountNamesBothCounts) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  const auto errors = run_gloo(2, [&](GlooGroup& g, int r) {
    auto c = g.make_communicator("p2p");
    std::vector<float> v(5, 1.0f);
    if (r == 0) c->send(v.data(), 5, 1, 0);
    if (r == 1) c->recv(v.data(), 4, 0, 0);
    c->barrier();
  });
  EXPECT_EQ(errors[1],
            "Communicator::recv: rank 1 expected 4 elements from rank 0 (tag 0) but 5 were sent");
}

TEST(GlooTest, ARankThatLeavesMakesTheOthersFailNamingIt) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  const auto errors = run_gloo(3, [&](GlooGroup& g, int r) {
    auto c = g.make_communicator("grads");
    std::vector<float> v(100, 1.0f);
    c->all_reduce(v.data(), 100, ReduceOp::sum);
    if (r == 2)
      throw std::runtime_error(
          "rank 2 crashed");  // its group closes its sockets, as a dead process's
    c->all_reduce(v.data(), 100, ReduceOp::sum);
  });
  EXPECT_EQ(errors[2], "rank 2 crashed");
  for (int r : {0, 1}) {
    EXPECT_NE(errors[static_cast<size_t>(r)].find("failed on rank " + std::to_string(r) +
                                                  " of 3: rank 2 died or left "
                                                  "the job"),
              std::string::npos)
        << errors[static_cast<size_t>(r)];
  }
}

TEST(GlooTest, AStalledPeerHitsTheDeadline) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  const auto errors = run_gloo(
      2,
      [&](GlooGroup& g, int r) {
        auto c = g.make_communicator("grads");
        if (r == 1) {
          std::this_thread::sleep_for(
              milliseconds(3000));  // never joins the first collective in time
          return;
        }
        std::vector<float> v(10, 1.0f);
        c->all_reduce(v.data(), 10, ReduceOp::sum);
      },
      milliseconds(500));
  EXPECT_NE(errors[0].find("Gloo all_reduce on 'grads' (call 1) passed its deadline of 500 ms on "
                           "rank 0 of 2: rank 1 did not respond within 1000 ms (stopped, hung, or "
                           "busy outside any collective)"),
            std::string::npos)
      << errors[0];
}

TEST(GlooTest, AStalledPeerIsNamedAndTheWaitingOnesSayWhereTheyWait) {
  if (!gloo_built()) GTEST_SKIP() << "built without Gloo";
  const auto errors = run_gloo(
      3,
      [&](GlooGroup& g, int r) {
        auto c = g.make_communicator("grads");
        std::vector<float> v(10, 1.0f);
        c->all_reduce(v.data(), 10, ReduceOp::sum);
        if (r == 2) {
          std::this_thread::sleep_for(milliseconds(4000));  // past the deadline and the grace
          return;
        }
        c->all_reduce(v.data(), 10, ReduceOp::sum);
      },
      milliseconds(800));
  EXPECT_EQ(errors[2], "");
  for (int r : {0, 1}) {
    const std::string& e = errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find(fmt::format("Gloo all_reduce on 'grads' (call 2) passed its deadline of 800 "
                                 "ms on rank {} of 3: rank 2 did not respond within 1000 ms",
                                 r)),
              std::string::npos)
        << e;
    EXPECT_NE(e.find(fmt::format("rank {} is waiting in all_reduce on 'grads' (call 2)", 1 - r)),
              std::string::npos)
        << e;
  }
}

}  // namespace
}  // namespace osprey::comm
