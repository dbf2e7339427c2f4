// TensorBoard (keras.callbacks.TensorBoard): writes event files that `tensorboard --logdir DIR`
// shows. Per epoch, each training log goes to DIR/train as "epoch_<name>" and each validation
// log (val_<name>) to DIR/validation as "epoch_<name>", so the two runs overlay in one chart, as
// Keras lays them out. With histogram_freq N, every N epochs each weight's histogram goes to
// DIR/train under its path (sequential/dense/kernel). In a multi-worker job only the chief writes.
//   model.fit(x, y, {.epochs = 10, .validation_split = 0.1,
//                    .callbacks = {os::callbacks::TensorBoard("logs", {.histogram_freq = 1})}});
#pragma once

#include <filesystem>
#include <memory>

#include "osprey/io/event_file.h"
#include "osprey/train/callback.h"

namespace osprey::train {

struct TensorBoardOptions {
  int histogram_freq = 0;  // epochs between weight histograms; 0: none
};

class TensorBoard : public Callback {
 public:
  explicit TensorBoard(std::filesystem::path log_dir, TensorBoardOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  // Each fit writes new files in the same folders (TensorBoard reads them in order).
  std::shared_ptr<Callback> clone() const override {
    return std::make_shared<TensorBoard>(log_dir_, options_);
  }
  const std::filesystem::path& log_dir() const { return log_dir_; }
  const TensorBoardOptions& options() const { return options_; }

 private:
  std::filesystem::path log_dir_;
  TensorBoardOptions options_;
  std::unique_ptr<io::EventFileWriter> train_, validation_;  // null off the chief
};

}  // namespace osprey::train

namespace osprey::callbacks {
inline std::shared_ptr<train::TensorBoard> TensorBoard(std::filesystem::path log_dir,
                                                       train::TensorBoardOptions options = {}) {
  return std::make_shared<train::TensorBoard>(std::move(log_dir), options);
}
}  // namespace osprey::callbacks
