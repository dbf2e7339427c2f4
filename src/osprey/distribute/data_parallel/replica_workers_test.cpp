// ReplicaWorkers: persistent threads, one per virtual device, each with its share of the pool.
#include "osprey/distribute/data_parallel/replica_workers.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"

namespace osprey::distribute {
namespace {

class ReplicaWorkersTest : public testing::Test {
 protected:
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = num_threads();
};

TEST_F(ReplicaWorkersTest, EveryStepRunsOnTheSameThreadsReplicaZeroOnTheCaller) {
  ReplicaWorkers workers(4);
  std::vector<std::thread::id> first(4), again(4);
  workers.run([&](int r) { first[static_cast<size_t>(r)] = std::this_thread::get_id(); });
  for (int step = 0; step < 5; ++step) {
    workers.run([&](int r) { again[static_cast<size_t>(r)] = std::this_thread::get_id(); });
    EXPECT_EQ(again, first) << "step " << step;  // no thread started per step
  }
  EXPECT_EQ(first[0], std::this_thread::get_id());
  for (size_t r = 1; r < 4; ++r) {
    for (size_t q = 0; q < r; ++q) EXPECT_NE(first[r], first[q]) << r << " " << q;
  }
}

TEST_F(ReplicaWorkersTest, EachReplicaGetsItsShareOfThePool) {
  set_num_threads(4);
  for (auto [replicas, setting, share] :
       {std::tuple{2, 0, 2}, std::tuple{4, 0, 1}, std::tuple{3, 0, 1}, std::tuple{8, 0, 1},
        std::tuple{2, 3, 3}}) {
    ReplicaWorkers workers(replicas, setting);
    EXPECT_EQ(workers.threads_per_replica(), share);
    std::vector<int> seen(static_cast<size_t>(replicas)), omp(static_cast<size_t>(replicas));
    workers.run([&](int r) {
      seen[static_cast<size_t>(r)] = num_threads();
      omp[static_cast<size_t>(r)] = omp_get_max_threads();  // oneDNN's team size
    });
    EXPECT_EQ(seen, std::vector<int>(static_cast<size_t>(replicas), share))
        << replicas << " replicas";
    EXPECT_EQ(omp, std::vector<int>(static_cast<size_t>(replicas), share))
        << replicas << " replicas";
  }
  // The caller's own count is back once the step is over.
  EXPECT_EQ(num_threads(), 4);
  EXPECT_EQ(omp_get_max_threads(), 4);
  // A later change of the process-wide count reaches the (already running) workers.
  ReplicaWorkers workers(2);
  workers.run([](int) {});
  set_num_threads(2);
  std::vector<int> seen(2);
  workers.run([&](int r) { seen[static_cast<size_t>(r)] = num_threads(); });
  EXPECT_EQ(seen, (std::vector<int>{1, 1}));
}

TEST_F(ReplicaWorkersTest, TheLowestReplicasErrorReachesTheCallerAndTheWorkersGoOn) {
  ReplicaWorkers workers(3);
  try {
    workers.run([](int r) {
      if (r >= 1) throw ValueError("replica " + std::to_string(r) + " failed");
    });
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "replica 1 failed");
  }
  std::vector<int> ran(3, 0);
  workers.run(
      [&](int r) { ran[static_cast<size_t>(r)] = 1; });  // no stale error from the last step
  EXPECT_EQ(ran, (std::vector<int>{1, 1, 1}));
}

TEST_F(ReplicaWorkersTest, ANegativeShareIsNamed) {
  try {
    MirroredStrategy s(virtual_devices(2), {.threads_per_replica = -1});
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("MirroredStrategy: threads_per_replica must be at least 0 "
                                         "(0: num_threads() / replicas). Received: -1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey::distribute
