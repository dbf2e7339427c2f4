// BackupAndRestore (keras.callbacks.BackupAndRestore): a killed training job, relaunched with the
// same program, resumes where its last backup was taken, at the exact step, and ends with the
// weights the uninterrupted run would have had, bit for bit. Keras resumes at epoch granularity;
// this backup holds everything the next step depends on:
//   - the weights and the optimizer state (iterations, slots, loss scale), as Model::save;
//   - every seed stream: the global one (unseeded Dropout, initializers) and each seeded layer's;
//   - the data position: epoch and step (an epoch's order is a function of the seeds and the
//     epoch, so the pipeline skips the batches already taken), the running loss and metrics;
//   - the History so far.
// Backups are folders BACKUP_DIR/ckpt-<global step>, each written atomically (model.safetensors
// and optimizer.safetensors carry a CRC32C; training_state.json carries one of its state). The
// two newest are kept: when the newest does not verify (a torn disk, a truncated copy), the one
// before is restored, with a warning naming the file. Only the chief writes (chief_writes.h);
// every worker restores. The global batch sequence depends only on the global batch, so a job
// may resume on another number of workers or devices (elastic resume).
//   auto backup = os::callbacks::BackupAndRestore("/scratch/backup", {.save_freq = "100"});
//   model.fit(x, y, {.epochs = 50, .callbacks = {backup}});   // relaunch after a crash: resumes
// Like Keras, the relaunched program must build the same model and call fit with the same data,
// batch size and seed; a backup taken with another number of steps per epoch is refused.
// Other callbacks' own state (EarlyStopping's patience) is not part of the backup, as in Keras.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/train/callback.h"

namespace osprey::train {

struct BackupAndRestoreOptions {
  // "epoch": a backup at each epoch end; a positive integer N ("100"): every N training steps
  // (counted across epochs; with steps_per_execution k, at the first batch end past each N).
  std::string save_freq = "epoch";
  // Remove the backups when fit ends normally (a finished job has nothing to resume).
  bool delete_checkpoint = true;
};

class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::filesystem::path backup_dir, BackupAndRestoreOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  const std::filesystem::path& backup_dir() const { return dir_; }
  // The backup the last fit resumed from (empty when it started afresh).
  const std::optional<std::filesystem::path>& restored_from() const { return restored_from_; }
  // The warnings of the last restore (one per backup that did not verify), as printed.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The backups in dir, newest first (complete ones: staging folders are not listed).
  static std::vector<std::filesystem::path> list_backups(const std::filesystem::path& dir);

 private:
  void backup(int epoch, int64_t step);
  // Restores everything from one backup; IoError when it does not verify.
  void try_restore(const std::filesystem::path& backup);

  std::filesystem::path dir_;
  BackupAndRestoreOptions options_;
  int64_t save_steps_ = 0;  // 0: at epoch ends
  int epoch_ = 0;
  int64_t global_step_ = 0;       // training steps since the start of the job
  int64_t epoch_start_step_ = 0;  // global_step_ when the current epoch began
  int64_t last_backup_step_ = -1;
  int64_t resumed_step_ = 0;  // steps of the resumed epoch taken before the relaunch
  std::map<std::string, std::vector<double>> history_;
  std::vector<int> history_epochs_;
  std::optional<std::filesystem::path> restored_from_;
  std::vector<std::string> warnings_;
};

}  // namespace osprey::train

namespace osprey::callbacks {
inline std::shared_ptr<train::BackupAndRestore> BackupAndRestore(
    std::filesystem::path backup_dir, train::BackupAndRestoreOptions options = {}) {
  return std::make_shared<train::BackupAndRestore>(std::move(backup_dir), std::move(options));
}
}  // namespace osprey::callbacks
