// ModelCheckpoint (save the model at each epoch end, or only when the monitored value improves)
// and CSVLogger (one row of logs per epoch, as Keras's callbacks).
//   auto ckpt = std::make_shared<ModelCheckpoint>("ckpt/epoch_{epoch}", ModelCheckpointOptions{.save_best_only = true});
#pragma once

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "osprey/train/callback.h"

namespace osprey::train {

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  bool save_best_only = false;
  std::string mode = "auto";
};

class ModelCheckpoint : public Callback {
 public:
  // "{epoch}" in the path is replaced by the 1-based epoch number, as Keras's format string.
  explicit ModelCheckpoint(std::string path, ModelCheckpointOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  const std::vector<std::string>& saved() const { return saved_; }

 private:
  std::string path_;
  ModelCheckpointOptions o_;
  bool maximize_ = false;
  double best_ = 0.0;
  std::vector<std::string> saved_;
};

class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, std::string separator = ",", bool append = false);
  ~CSVLogger() override;
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

 private:
  std::string filename_, sep_;
  bool append_;
  std::FILE* file_ = nullptr;
  std::vector<std::string> keys_;
};

}  // namespace osprey::train
