// Chief-only writing: rank 0 writes the destination; another rank's write goes to a temporary
// folder of its own that is gone afterwards, also when the write throws.
#include "osprey/train/chief_writes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

namespace osprey::train {
namespace {

namespace fs = std::filesystem;

class FakeWorker final : public Strategy {
 public:
  explicit FakeWorker(int rank) : rank_(rank) {}
  std::string name() const override { return "FakeWorker"; }
  int num_replicas_in_sync() const override { return 2; }
  int num_workers() const noexcept override { return 2; }
  int worker_rank() const noexcept override { return rank_; }
  std::unique_ptr<StepExecutor> make_executor(std::shared_ptr<models::Network>,
                                              std::shared_ptr<optim::Optimizer>) const override {
    return nullptr;
  }

 private:
  int rank_;
};

TEST(ChiefWritesTest, OnlyTheChiefsWriteReachesTheDestination) {
  const fs::path dir = fs::temp_directory_path() / "osprey_chief_writes_test";
  fs::remove_all(dir);
  fs::path seen_by_worker;
  write_on_chief(FakeWorker(1), dir / "model", [&](const fs::path& p) {
    seen_by_worker = p;
    fs::create_directories(p);
    std::ofstream(p / "w.bin") << "worker";
  });
  EXPECT_EQ(seen_by_worker.filename(), "model");
  EXPECT_NE(seen_by_worker.parent_path().filename().string().find("osprey-worker1-"),
            std::string::npos)
      << seen_by_worker;
  EXPECT_FALSE(fs::exists(seen_by_worker.parent_path())) << "the worker's folder is removed";
  EXPECT_FALSE(fs::exists(dir));
  fs::path failed;
  EXPECT_THROW(write_on_chief(FakeWorker(1), dir / "model",
                              [&](const fs::path& p) {
                                failed = p;
                                fs::create_directories(p);
                                throw std::runtime_error("disk full");
                              }),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(failed.parent_path()));
  write_on_chief(FakeWorker(0), dir / "model", [&](const fs::path& p) {
    EXPECT_EQ(p, dir / "model");
    fs::create_directories(p);
  });
  EXPECT_TRUE(fs::exists(dir / "model"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace osprey::train
