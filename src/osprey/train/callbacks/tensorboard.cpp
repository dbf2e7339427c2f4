#include "osprey/train/callbacks/tensorboard.h"

#include "osprey/core/error.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::train {

TensorBoard::TensorBoard(std::filesystem::path log_dir, TensorBoardOptions options)
    : log_dir_(std::move(log_dir)), options_(options) {
  OSPREY_CHECK(!log_dir_.empty(), "TensorBoard: the log folder is empty");
  OSPREY_CHECK(options_.histogram_freq >= 0,
               "TensorBoard: histogram_freq must be 0 or more. Received: {}",
               options_.histogram_freq);
}

void TensorBoard::on_train_begin(const Logs&) {
  train_.reset();
  validation_.reset();
  if (!model().trainer().strategy().is_chief()) return;
  train_ = std::make_unique<io::EventFileWriter>(log_dir_ / "train");
}

void TensorBoard::on_epoch_end(int epoch, const Logs& logs) {
  if (!train_) return;
  for (const auto& [name, value] : logs.items()) {
    if (name.rfind("val_", 0) == 0) {
      if (!validation_)
        validation_ = std::make_unique<io::EventFileWriter>(log_dir_ / "validation");
      validation_->add_scalar("epoch_" + name.substr(4), value, epoch);
    } else {
      train_->add_scalar("epoch_" + name, value, epoch);
    }
  }
  if (options_.histogram_freq > 0 && (epoch + 1) % options_.histogram_freq == 0) {
    for (const autograd::Variable& v : model().network().variables()) {
      const Tensor w = v.value().to(DType::float32).contiguous();
      train_->add_histogram(v.name(), w.data<float>(), w.numel(), epoch);
    }
  }
}

void TensorBoard::on_train_end(const Logs&) {
  train_.reset();
  validation_.reset();
}

}  // namespace osprey::train
