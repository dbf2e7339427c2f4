// What `osprey train` (train.cpp) sets up before it fits: its options, the strategy they name, the
// data (Fashion-MNIST, IDX, NPY, CSV or a folder of images) and the model, checked against each
// other before any training, each refusal a UsageError naming the flag.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "osprey/data/labeled_arrays.h"
#include "osprey/train/model.h"
#include "osprey/train/strategy.h"

namespace osprey::cli {

struct TrainArgs {
  std::string model = "mlp";  // mlp, cnn, or a model description (.json, .toml, a saved folder)
  int epochs = 3;
  int64_t batch_size = 128;
  std::string optimizer = "adam";
  double lr = 1e-3;
  uint64_t seed = 42;
  std::string data;  // '' Fashion-MNIST's default folders
  std::string data_format = "auto";
  std::string test_data;  // '' none (Fashion-MNIST: its t10k files)
  std::string label_column = "label";
  std::string image_size;  // "HxW" ('' keep the images' size)
  std::string color_mode = "rgb";
  std::string output = "osprey_fmnist_model";
  std::string strategy = "one_device";
  int devices = 1;  // per worker
  std::string dtype_policy = "float32";
  std::string compression = "none";
  std::string communication = "auto";
  std::optional<double> timeout;  // seconds: deadline of every cross-worker call (default 300)
  int64_t steps_per_epoch = -1;
  double validation_split = 0.0;  // the last fraction of the training rows, held out
  std::string backup;             // BackupAndRestore folder ('' off)
  std::string checkpoint_dir;     // ModelCheckpoint folder ('' off)
  std::string backup_freq = "epoch";
  std::string tensorboard;            // TensorBoard log folder ('' off)
  int histogram_freq = 0;             // epochs between weight histograms in it
  std::string csv_log;                // CSVLogger file ('' off)
  std::string profile;                // Profiler log folder ('' off)
  std::string profile_steps = "2-4";  // the profiled steps, FIRST-LAST
  std::optional<int> early_stopping;  // EarlyStopping's patience
  // --strategy parameter_server
  std::string ps_mode = "sync";
  int replicas_to_aggregate = 0;
  int64_t max_staleness = -1;
  bool down_weight_stale = false;
  bool staleness_aware_lr = false;
  int warmup_epochs = 0;
  int ps_shards = 1;  // parts each variable is split into across the ps
  std::string ps_placement = "round_robin";
  // --model gpt|lstm (cli/train_text.h)
  std::string tokenizer = "char";
  int64_t block_size = 64;
  int64_t n_layer = 4;  // GPT blocks, or LSTM layers
  int64_t n_head = 4;
  int64_t n_embd = 128;  // GPT width, or the LSTM's embedding width
  int64_t units = 256;   // LSTM
  double dropout = 0.0;  // GPT
};

// The training split and, when there is one, the test split. Fashion-MNIST (no --data, or a
// folder holding its files) has both; other data has a test split when --test-data names one.
struct TrainData {
  std::string format;
  data::LabeledArrays train, test;
  int64_t num_classes = 0;
};

// Managed-job conventions (cli/managed_job.h): where the model, checkpoints and logs go.
void apply_managed_job_environment(TrainArgs& a, const CLI::App& cmd);
// The strategy the options name; a multi-worker one connects the workers here (a collective).
// Options that do not go together, and a cluster spec (OSPREY_CONFIG/TF_CONFIG) the strategy
// refuses, are UsageErrors; a failure to connect is not.
std::shared_ptr<const train::Strategy> make_strategy(const TrainArgs& a);
// The global batch, which fit splits evenly among the strategy's `replicas` in sync (Keras's rule
// for a global batch): a --batch-size the user gave (`given`) must be a multiple of them, else a
// UsageError names the nearest ones ("use --batch-size 126 or 129"); the default (128) is rounded
// to the nearest multiple instead (129 for 3 replicas), so that `osprey launch --workers 3 --ps 2
// -- osprey train --strategy parameter_server` runs as written.
int64_t checked_batch_size(int64_t batch_size, bool given, int replicas);
// A row's shape: x's shape without its first (batch) axis.
Shape row_shape(const Shape& x);
TrainData load_data(const TrainArgs& a, const CLI::App& cmd);
Model make_model(const TrainArgs& a);
// The model must take the data's rows and give one score per class, checked before training: a
// model without an input shape is built for the data's; a grey image [H, W, 1] also feeds a model
// that takes [H, W].
void fit_model_to_data(const TrainArgs& a, Model& model, TrainData& d);

}  // namespace osprey::cli
