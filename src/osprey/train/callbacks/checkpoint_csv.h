// ModelCheckpoint (save the model at each epoch end, or only when the monitored value improves)
// and CSVLogger (one row of logs per epoch, as Keras's callbacks).
//   auto ckpt = os::callbacks::ModelCheckpoint("ckpt/epoch_{epoch}", {.save_best_only = true});
//   model.fit(x, y, {.epochs = 10, .callbacks = {ckpt, os::callbacks::CSVLogger("log.csv")}});
#pragma once

#include <cstdio>
#include <limits>
#include <memory>
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

// Keras's spellings (keras.callbacks.ModelCheckpoint, keras.callbacks.CSVLogger).
namespace osprey::callbacks {
inline std::shared_ptr<train::ModelCheckpoint> ModelCheckpoint(
    std::string path, train::ModelCheckpointOptions options = {}) {
  return std::make_shared<train::ModelCheckpoint>(std::move(path), std::move(options));
}
inline std::shared_ptr<train::CSVLogger> CSVLogger(std::string filename,
                                                   std::string separator = ",",
                                                   bool append = false) {
  return std::make_shared<train::CSVLogger>(std::move(filename), std::move(separator), append);
}
}  // namespace osprey::callbacks
