#include "osprey/comm/in_process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "osprey/core/error.h"

namespace osprey::comm {
namespace {

// Runs body(rank) on one thread per rank; returns each rank's error message ("" when none).
std::vector<std::string> run_ranks(InProcessGroup& g,
                                   const std::function<void(Communicator&)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(g.size()));
  std::vector<std::thread> threads;
  for (int r = 0; r < g.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        body(g.rank(r));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

void expect_distributed_error(const std::function<void()>& call, const std::string& want) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected: " << want;
  } catch (const DistributedError& e) {
    EXPECT_EQ(std::string(e.what()), want);
  }
}

TEST(InProcessTest, AllReduceSumAndMeanMatchHandComputation) {
  InProcessGroup g(3);
  // rank r holds {r + 1, 10 * (r + 1), -r}: sums {6, 60, -3}, means {2, 20, -1}.
  std::vector<std::vector<float>> sum(3), mean(3);
  run_ranks(g, [&](Communicator& c) {
    const auto r = static_cast<float>(c.rank());
    auto& s = sum[static_cast<size_t>(c.rank())];
    auto& m = mean[static_cast<size_t>(c.rank())];
    s = {r + 1, 10 * (r + 1), -r};
    m = s;
    c.all_reduce(s.data(), 3, ReduceOp::sum);
    c.all_reduce(m.data(), 3, ReduceOp::mean);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(sum[static_cast<size_t>(r)], (std::vector<float>{6, 60, -3}));
    EXPECT_EQ(mean[static_cast<size_t>(r)], (std::vector<float>{2, 20, -1}));
  }
}

TEST(InProcessTest, AllReduceOfALargeBufferSplitsWorkAcrossRanksExactly) {
  // 5000 elements over 4 ranks: blocks of uneven length and more than one tile each.
  InProcessGroup g(4);
  const int64_t n = 5000;
  std::vector<std::vector<float>> bufs(4);
  run_ranks(g, [&](Communicator& c) {
    auto& b = bufs[static_cast<size_t>(c.rank())];
    b.resize(n);
    for (int64_t i = 0; i < n; ++i)
      b[static_cast<size_t>(i)] = static_cast<float>(i % 7 + c.rank());
    c.all_reduce(b.data(), n, ReduceOp::sum);
  });
  for (int r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bufs[static_cast<size_t>(r)][static_cast<size_t>(i)],
                static_cast<float>(4 * (i % 7) + 6))
          << i;
    }
  }
}

TEST(InProcessTest, AllReduceAddsInRankOrderSoRoundingIsFixed) {
  // Rank order 0, 1, 2: (1e8 + 1) rounds to 1e8 in float32, then - 1e8 gives 0 (another order, 1).
  InProcessGroup g(3);
  const float vals[3] = {1e8f, 1.0f, -1e8f};
  std::vector<float> out(3);
  for (int run = 0; run < 5; ++run) {
    run_ranks(g, [&](Communicator& c) {
      float v = vals[c.rank()];
      c.all_reduce(&v, 1, ReduceOp::sum);
      out[static_cast<size_t>(c.rank())] = v;
    });
    // ((1e8 + 1) - 1e8) = 0 in float32.
    for (float v : out) EXPECT_EQ(v, 0.0f);
  }
}

TEST(InProcessTest, ReduceScatterAllGatherAndBroadcast) {
  InProcessGroup g(2);
  std::vector<std::vector<float>> rs(2), ag(2), bc(2);
  run_ranks(g, [&](Communicator& c) {
    const int r = c.rank();
    // rank 0 sends {1, 2, 3, 4}, rank 1 {10, 20, 30, 40}: block 0 sums {11, 22}, block 1 {33, 44}.
    const float k = r == 0 ? 1.0f : 10.0f;
    std::vector<float> send = {k, 2 * k, 3 * k, 4 * k};
    auto& out = rs[static_cast<size_t>(r)];
    out.resize(2);
    c.reduce_scatter(send.data(), out.data(), 2, ReduceOp::sum);
    auto& gathered = ag[static_cast<size_t>(r)];
    gathered.resize(4);
    const float mine[2] = {static_cast<float>(r), static_cast<float>(r) + 0.5f};
    c.all_gather(mine, gathered.data(), 2);
    auto& b = bc[static_cast<size_t>(r)];
    b = {static_cast<float>(r) * 7, 1.0f};
    c.broadcast(b.data(), 2, 1);
    c.barrier();
  });
  EXPECT_EQ(rs[0], (std::vector<float>{11, 22}));
  EXPECT_EQ(rs[1], (std::vector<float>{33, 44}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ag[static_cast<size_t>(r)], (std::vector<float>{0, 0.5f, 1, 1.5f}));
    EXPECT_EQ(bc[static_cast<size_t>(r)], (std::vector<float>{7, 1}));
  }
}

TEST(InProcessTest, ReduceScatterMean) {
  InProcessGroup g(2);
  std::vector<std::vector<float>> rs(2);
  run_ranks(g, [&](Communicator& c) {
    std::vector<float> send = {1.0f + static_cast<float>(c.rank()), 4.0f};
    rs[static_cast<size_t>(c.rank())].resize(1);
    c.reduce_scatter(send.data(), rs[static_cast<size_t>(c.rank())].data(), 1, ReduceOp::mean);
  });
  EXPECT_EQ(rs[0], std::vector<float>{1.5f});
  EXPECT_EQ(rs[1], std::vector<float>{4.0f});
}

TEST(InProcessTest, SendRecvInOrderPerTag) {
  InProcessGroup g(2);
  std::vector<float> got(3);
  run_ranks(g, [&](Communicator& c) {
    if (c.rank() == 0) {
      const float a[2] = {1, 2}, b[1] = {9};
      c.send(a, 2, 1, 0);
      c.send(b, 1, 1, 5);
    } else {
      c.recv(got.data() + 2, 1, 0, 5);  // tags are matched independently
      c.recv(got.data(), 2, 0, 0);
    }
  });
  EXPECT_EQ(got, (std::vector<float>{1, 2, 9}));
}

TEST(InProcessTest, TensorOverloads) {
  InProcessGroup g(2);
  std::vector<float> out(2);
  run_ranks(g, [&](Communicator& c) {
    Tensor t = Tensor::empty({2}, {DType::float32});
    t.data<float>()[0] = static_cast<float>(c.rank());
    t.data<float>()[1] = 3.0f;
    c.all_reduce(t, ReduceOp::mean);
    if (c.rank() == 1) std::copy_n(t.data<float>(), 2, out.begin());
  });
  EXPECT_EQ(out, (std::vector<float>{0.5f, 3.0f}));
}

TEST(InProcessTest, MismatchedCountsThrowOnEveryRank) {
  InProcessGroup g(2);
  const auto errors = run_ranks(g, [&](Communicator& c) {
    std::vector<float> v(static_cast<size_t>(3 + c.rank()));
    c.all_reduce(v.data(), static_cast<int64_t>(v.size()), ReduceOp::sum);
  });
  for (const auto& e : errors) {
    EXPECT_TRUE(
        contains(e, "Communicator::all_reduce: rank 0 passed 3 elements but rank 1 passed 4"))
        << e;
  }
  // The group is still usable afterwards.
  const auto ok = run_ranks(g, [&](Communicator& c) { c.barrier(); });
  for (const auto& e : ok) EXPECT_EQ(e, "");
}

TEST(InProcessTest, MismatchedCollectivesAndOpsThrow) {
  InProcessGroup g(2);
  auto errors = run_ranks(g, [&](Communicator& c) {
    float v = 1;
    if (c.rank() == 0)
      c.all_reduce(&v, 1, ReduceOp::sum);
    else
      c.broadcast(&v, 1, 0);
  });
  for (const auto& e : errors)
    EXPECT_TRUE(contains(e, "rank 0 called all_reduce but rank 1 called broadcast")) << e;
  errors = run_ranks(g, [&](Communicator& c) {
    float v = 1;
    c.all_reduce(&v, 1, c.rank() == 0 ? ReduceOp::sum : ReduceOp::mean);
  });
  for (const auto& e : errors)
    EXPECT_TRUE(contains(e, "rank 0 asked for sum but rank 1 for mean")) << e;
}

TEST(InProcessTest, BadRanksAreNamed) {
  InProcessGroup g(2);
  auto errors = run_ranks(g, [&](Communicator& c) {
    float v = 1;
    c.broadcast(&v, 1, 2);
  });
  for (const auto& e : errors) {
    EXPECT_TRUE(contains(e, "Communicator::broadcast: root 2 is not a rank of a group of size 2"))
        << e;
  }
  float v = 0;
  try {
    g.rank(0).send(&v, 1, 5);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(
        e.what(), "Communicator::send: destination rank 5 is not a rank of a group of size 2"))
        << e.what();
  }
  try {
    g.rank(1).recv(&v, 1, -1);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_TRUE(
        contains(e.what(), "Communicator::recv: source rank -1 is not a rank of a group of size 2"))
        << e.what();
  }
  try {
    g.rank(2);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_TRUE(
        contains(e.what(), "InProcessGroup::rank: rank 2 is not a rank of a group of size 2"))
        << e.what();
  }
  EXPECT_THROW(InProcessGroup(0), ValueError);
}

TEST(InProcessTest, RecvOfTheWrongCountAndBadTensorsAreErrors) {
  InProcessGroup g(2);
  const auto errors = run_ranks(g, [&](Communicator& c) {
    float buf[3] = {1, 2, 3};
    if (c.rank() == 0)
      c.send(buf, 3, 1);
    else
      c.recv(buf, 2, 0);
  });
  EXPECT_TRUE(contains(
      errors[1],
      "Communicator::recv: rank 1 expected 2 elements from rank 0 (tag 0) but 3 were sent"))
      << errors[1];
  Tensor d = Tensor::empty({2}, {DType::float64});
  try {
    g.rank(0).all_reduce(d, ReduceOp::sum);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(
        e.what(), "Communicator::all_reduce: the input tensor must be float32. Received: float64"))
        << e.what();
  }
}

TEST(InProcessTest, AbortWakesRanksWaitingInACollectiveOrRecvAndResetRestoresTheGroup) {
  // Ranks 1 and 2 wait in an all_reduce (and a recv) that rank 0 never joins: rank 0 aborts.
  InProcessGroup g(3);
  const std::string want = "InProcessGroup: the collective was aborted: rank 0 failed";
  const std::vector<std::string> errors = run_ranks(g, [&](Communicator& c) {
    if (c.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      g.abort("rank 0 failed");
      g.abort("a second reason is not kept");
      return;
    }
    if (c.rank() == 2) {
      float m = 0;
      try {
        c.recv(&m, 1, 0);
      } catch (const DistributedError&) {
      }
    }
    float v = 1.0f;
    c.all_reduce(&v, 1, ReduceOp::sum);
  });
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], want);
  EXPECT_EQ(errors[2], want);
  EXPECT_TRUE(g.aborted());
  // Until reset, every call throws at once, without waiting for the other ranks.
  expect_distributed_error([&] { g.rank(1).barrier(); }, want);
  g.reset();
  EXPECT_FALSE(g.aborted());
  std::vector<float> out(3);
  const std::vector<std::string> after = run_ranks(g, [&](Communicator& c) {
    float x = static_cast<float>(c.rank() + 1);
    c.all_reduce(&x, 1, ReduceOp::sum);
    out[static_cast<size_t>(c.rank())] = x;
  });
  EXPECT_EQ(after, (std::vector<std::string>(3)));
  EXPECT_EQ(out, (std::vector<float>{6, 6, 6}));
}

TEST(InProcessTest, OneRankIsTheIdentity) {
  InProcessGroup g(1);
  float v[2] = {3, 4};
  g.rank(0).all_reduce(v, 2, ReduceOp::mean);
  g.rank(0).broadcast(v, 2, 0);
  g.rank(0).barrier();
  EXPECT_EQ(v[0], 3.0f);
  EXPECT_EQ(v[1], 4.0f);
}

}  // namespace
}  // namespace osprey::comm
