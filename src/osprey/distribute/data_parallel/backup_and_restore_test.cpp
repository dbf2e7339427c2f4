// BackupAndRestore under MirroredStrategy on 2 virtual devices: a crash mid-epoch and a relaunch
// end bitwise equal to the uninterrupted run (the replicas take the restored weights and seeded
// Dropout's stream); elastic resume onto 1 or 4 devices goes on from the same global batch within
// 1e-5.
#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/train/callbacks/backup_test_job.h"

namespace osprey::distribute {
namespace {

namespace fs = std::filesystem;
using train::testing::BackupJob;

BackupJob mirrored(int devices, bool seeded_dropout) {
  BackupJob job;
  job.unseeded_dropout = false;
  job.seeded_dropout = seeded_dropout;
  job.strategy = [devices] { return std::make_shared<MirroredStrategy>(virtual_devices(devices)); };
  return job;
}

TEST(MirroredBackupTest, ACrashMidEpochResumesBitForBitOn2Devices) {
  const fs::path dir = fs::temp_directory_path() / "osprey_mirrored_backup_test";
  fs::remove_all(dir);
  const BackupJob job = mirrored(2, true);
  Model reference = job.build();
  job.fit(reference, {});
  ASSERT_TRUE(job.fit_until_crash(dir, "5", 33));
  Model resumed = job.build();
  auto backup = callbacks::BackupAndRestore(dir, {.save_freq = "5"});
  job.fit(resumed, {backup});
  EXPECT_EQ(backup->restored_from(), dir / "ckpt-000000000030");
  train::testing::expect_bitwise_equal(resumed, reference);
}

TEST(MirroredBackupTest, ElasticResumeOnAnotherNumberOfDevices) {
  const BackupJob two = mirrored(2, false);
  Model reference = two.build();
  two.fit(reference, {});
  for (const int devices : {1, 4}) {
    const fs::path dir = fs::temp_directory_path() / "osprey_elastic_backup_test";
    fs::remove_all(dir);
    ASSERT_TRUE(two.fit_until_crash(dir, "5", 33));
    const BackupJob other = mirrored(devices, false);
    Model resumed = other.build();
    auto backup = callbacks::BackupAndRestore(dir, {.save_freq = "5"});
    other.fit(resumed, {backup});
    EXPECT_EQ(backup->restored_from(), dir / "ckpt-000000000030") << devices;
    EXPECT_LT(testing::max_relative_difference(resumed.get_weights(), reference.get_weights()),
              1e-5)
        << devices;
  }
}

}  // namespace
}  // namespace osprey::distribute
