// BackupAndRestore on one device: a run crashed mid-epoch and relaunched ends with the weights and
// History of the uninterrupted run, bit for bit; damaged backups fall back to the previous one.
#include "osprey/train/callbacks/backup_and_restore.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "osprey/io/crc32c.h"
#include "osprey/io/json.h"
#include "osprey/testing/test_helpers.h"
#include "osprey/train/callbacks/backup_test_job.h"

namespace osprey::train {
namespace {

namespace fs = std::filesystem;
using testing::BackupJob;
using testing::expect_bitwise_equal;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("osprey_backup_test_" + name);
  fs::remove_all(d);
  return d;
}

std::string backup_name(int64_t step) { return fmt::format("ckpt-{:012d}", step); }

void flip_last_byte(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-1, std::ios::end);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(-1, std::ios::end);
  f.write(&c, 1);
}

// The uninterrupted run, without any backup: what every resumed run must end with.
struct Reference {
  Model model;
  History history;
};
const Reference& reference() {
  static const Reference r = [] {
    const BackupJob job;
    Reference out{job.build(), {}};
    out.history = job.fit(out.model, {});
    return out;
  }();
  return r;
}

// Relaunches the job over dir with a BackupAndRestore (backups every save_freq), expects the
// uninterrupted run's weights bit for bit, and returns the callback for more checks.
std::shared_ptr<BackupAndRestore> relaunch(const BackupJob& job, const fs::path& dir,
                                           const std::string& save_freq,
                                           History* history = nullptr) {
  Model resumed = job.build();
  auto backup = callbacks::BackupAndRestore(dir, {.save_freq = save_freq});
  const History h = job.fit(resumed, {backup});
  if (history != nullptr) *history = h;
  expect_bitwise_equal(resumed, reference().model);
  return backup;
}

// The only warning of a relaunch that fell back from the newest backup.
std::string only_warning(const BackupAndRestore& backup) {
  EXPECT_EQ(backup.warnings().size(), 1U);
  return backup.warnings().empty() ? std::string() : backup.warnings()[0];
}

TEST(BackupAndRestoreTest, ACrashMidEpochResumesAtTheExactStepBitForBit) {
  const fs::path dir = fresh_dir("steps");
  const BackupJob job;
  // 20 steps per epoch; backups every 5 steps; the crash at step 27 leaves ckpt 25 and 20.
  ASSERT_TRUE(job.fit_until_crash(dir, "5", 27));
  EXPECT_EQ(BackupAndRestore::list_backups(dir),
            (std::vector<fs::path>{dir / backup_name(25), dir / backup_name(20)}));
  History h;
  const auto backup = relaunch(job, dir, "5", &h);
  ASSERT_TRUE(backup->restored_from().has_value());
  EXPECT_EQ(*backup->restored_from(), dir / backup_name(25));
  EXPECT_TRUE(backup->warnings().empty());
  // The epoch the crash cut short reports its whole loss and accuracy, as uninterrupted.
  EXPECT_EQ(h.history, reference().history.history);
  EXPECT_EQ(h.epoch, reference().history.epoch);
  EXPECT_FALSE(fs::exists(dir)) << "a finished run removes its backups (delete_checkpoint)";
}

TEST(BackupAndRestoreTest, ABackupAtAnEpochsLastStepResumesIntoItsEnd) {
  const fs::path dir = fresh_dir("edge");
  const BackupJob job;
  ASSERT_TRUE(job.fit_until_crash(dir, "10", 22));  // newest: step 20, the end of epoch 1
  History h;
  relaunch(job, dir, "10", &h);
  EXPECT_EQ(h.history, reference().history.history);
}

TEST(BackupAndRestoreTest, EpochBackupsResumeAtTheStartOfTheInterruptedEpoch) {
  const fs::path dir = fresh_dir("epoch");
  const BackupJob job;
  ASSERT_TRUE(job.fit_until_crash(dir, "epoch", 47));  // epoch 3 of 3 half done
  EXPECT_EQ(BackupAndRestore::list_backups(dir).front(), dir / backup_name(40));
  History h;
  relaunch(job, dir, "epoch", &h);
  EXPECT_EQ(h.history, reference().history.history);
}

TEST(BackupAndRestoreTest, ADamagedNewestBackupFallsBackToThePreviousWithAWarning) {
  const BackupJob job;
  for (const std::string file : {"model.safetensors", "optimizer.safetensors"}) {
    const fs::path dir = fresh_dir("damaged");
    ASSERT_TRUE(job.fit_until_crash(dir, "5", 27));
    flip_last_byte(dir / backup_name(25) / file);
    const auto backup = relaunch(job, dir, "5");
    EXPECT_EQ(backup->restored_from(), dir / backup_name(20)) << file;
    const std::string w = only_warning(*backup);
    EXPECT_NE(w.find((dir / backup_name(25) / file).string() + ": checksum mismatch"),
              std::string::npos)
        << w;
    EXPECT_NE(w.find("restoring the previous backup " + (dir / backup_name(20)).string()),
              std::string::npos)
        << w;
  }
}

TEST(BackupAndRestoreTest, ATruncatedStateFileIsNamedAndSkipped) {
  const fs::path dir = fresh_dir("truncated");
  const BackupJob job;
  ASSERT_TRUE(job.fit_until_crash(dir, "5", 27));
  const fs::path state = dir / backup_name(25) / "training_state.json";
  fs::resize_file(state, fs::file_size(state) / 2);
  const auto backup = relaunch(job, dir, "5");
  EXPECT_EQ(backup->restored_from(), dir / backup_name(20));
  EXPECT_NE(only_warning(*backup).find(state.string()), std::string::npos);
}

TEST(BackupAndRestoreTest, AnEditedStateFailsItsChecksum) {
  const fs::path dir = fresh_dir("edited");
  const BackupJob job;
  ASSERT_TRUE(job.fit_until_crash(dir, "5", 27));
  const fs::path state = dir / backup_name(25) / "training_state.json";
  nlohmann::json j = io::read_json_file(state);
  j["state"]["step"] = 4;  // well-formed, but not what was saved
  io::write_json_file(state, j);
  const auto backup = relaunch(job, dir, "5");
  EXPECT_EQ(backup->restored_from(), dir / backup_name(20));
  EXPECT_NE(only_warning(*backup).find(state.string() + ": checksum mismatch"), std::string::npos);
}

// A state with a valid checksum whose fields do not fit the fit (another program's backup, a
// hand-edited file with its checksum redone): refused naming the file and the field, before any
// weight is loaded, so the model keeps its initial weights.
TEST(BackupAndRestoreTest, AStateThatDoesNotFitIsRefusedBeforeAnythingIsLoaded) {
  const BackupJob job;
  const auto edited = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit,
                          const std::vector<std::string>& expected) {
    const fs::path dir = fresh_dir(name);
    ASSERT_TRUE(job.fit_until_crash(dir, "5", 27));
    for (const int64_t step : {25, 20}) {
      const fs::path state = dir / backup_name(step) / "training_state.json";
      nlohmann::json j = io::read_json_file(state);
      edit(j["state"]);
      j["crc32c"] = fmt::format("{:08x}", io::crc32c(j["state"].dump()));
      io::write_json_file(state, j);
    }
    Model resumed = job.build();
    const std::vector<Tensor> initial = resumed.get_weights();
    osprey::testing::expect_error<ValueError>(
        [&] { job.fit(resumed, {callbacks::BackupAndRestore(dir, {.save_freq = "5"})}); },
        expected);
    const std::vector<Tensor> after = resumed.get_weights();
    ASSERT_EQ(after.size(), initial.size());
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(after[i].to_vector<float>(), initial[i].to_vector<float>()) << name << " " << i;
    }
    fs::remove_all(dir);
  };
  const std::string file = fmt::format("/{}/training_state.json", backup_name(25));
  edited("negative_epoch", [](nlohmann::json& s) { s["epoch"] = -1000000000; },
         {file,
          "the position (epoch -1000000000, step 5, global step 25) is not one a fit of "
          "20 steps per epoch reaches"});
  edited("step_past_epoch", [](nlohmann::json& s) { s["step"] = 21; },
         {file, "(epoch 1, step 21, global step 25)"});
  edited("global_step_overflow", [](nlohmann::json& s) { s["global_step"] = INT64_MAX; },
         {file, "global step 9223372036854775807"});
  edited("history", [](nlohmann::json& s) { s["history"]["loss"].push_back(1.0); },
         {file, "history \"loss\" holds 2 values for 1 epochs"});
  edited("metric_count", [](nlohmann::json& s) { s["running_state"][2] = 1e300; },
         {file, "load_running_state: metric", "saved state is cut short (it claims 1e+300 values"});
  edited("layer_seeds",
         [](nlohmann::json& s) {
           s["layer_seeds"] = {{{"path", "no_such_layer"}, {"calls", 1}}};
         },
         {file, "set_seed_states: no layer \"no_such_layer\""});
}

TEST(BackupAndRestoreTest, WhenNoBackupVerifiesNothingIsTrained) {
  const fs::path dir = fresh_dir("all_damaged");
  const BackupJob job;
  ASSERT_TRUE(job.fit_until_crash(dir, "5", 27));
  flip_last_byte(dir / backup_name(25) / "model.safetensors");
  flip_last_byte(dir / backup_name(20) / "model.safetensors");
  Model resumed = job.build();
  osprey::testing::expect_error<IoError>(
      [&] { job.fit(resumed, {callbacks::BackupAndRestore(dir, {.save_freq = "5"})}); },
      {"BackupAndRestore: none of the 2 backups in " + dir.string() + " could be restored",
       backup_name(25) + "/model.safetensors: checksum mismatch",
       backup_name(20) + "/model.safetensors: checksum mismatch"});
  EXPECT_TRUE(fs::exists(dir / backup_name(25))) << "backups are never removed on failure";
  fs::remove_all(dir);
}

TEST(BackupAndRestoreTest, ARelaunchWithAnotherBatchSizeIsRefused) {
  const fs::path dir = fresh_dir("batch");
  const BackupJob job;
  ASSERT_TRUE(job.fit_until_crash(dir, "5", 27));
  BackupJob other = job;
  other.batch_size = 64;
  Model resumed = other.build();
  osprey::testing::expect_error<ValueError>(
      [&] { other.fit(resumed, {callbacks::BackupAndRestore(dir, {.save_freq = "5"})}); },
      {backup_name(25) + " was taken with 20 steps per epoch; this fit has 10"});
  fs::remove_all(dir);
}

TEST(BackupAndRestoreTest, KeepsTheTwoNewestAndRemovesStaleStaging) {
  const fs::path dir = fresh_dir("keep");
  fs::create_directories(dir / (backup_name(3) + ".tmp-999999999-abcdef"));  // no such process
  const BackupJob job;
  ASSERT_TRUE(job.fit_until_crash(dir, "4", 30));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{backup_name(24), backup_name(28)}));
  fs::remove_all(dir);
}

TEST(BackupAndRestoreTest, BadOptionsAndUnwritableFoldersFailBeforeTraining) {
  osprey::testing::expect_error<ValueError>(
      [] { BackupAndRestore("b", {.save_freq = "0"}); },
      {"save_freq must be \"epoch\" or a positive number of steps. Received: \"0\""});
  osprey::testing::expect_error<ValueError>([] { BackupAndRestore("b", {.save_freq = "10x"}); },
                                            {"Received: \"10x\""});
  const fs::path file = fresh_dir("a_file");
  std::ofstream(file) << "not a folder";
  const BackupJob job;
  Model m = job.build();
  osprey::testing::expect_error<IoError>(
      [&] { job.fit(m, {callbacks::BackupAndRestore(file / "backup")}); },
      {file.string() + ": is a file where a folder is expected"});
  expect_bitwise_equal(m, job.build());  // not one step was taken
  fs::remove(file);
}

}  // namespace
}  // namespace osprey::train
