// Options of fit, evaluate and predict (Keras's arguments), and the History fit returns.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/data/dataset.h"
#include "osprey/data/labeled_arrays.h"
#include "osprey/train/callback.h"

namespace osprey::train {

// Validation data: tensors {x, y}, labeled arrays (`auto [train, val] = data.split_tail(n)`,
// then `.validation_data = val`) or a dataset of (x, y) batches.
struct ValidationData {
  ValidationData(Tensor x_, Tensor y_) : x(std::move(x_)), y(std::move(y_)) {}
  ValidationData(data::Dataset d) : dataset(std::move(d)) {}  // NOLINT
  // NOLINTNEXTLINE(google-explicit-constructor): `.validation_data = val`, as Keras's tuple
  ValidationData(const data::LabeledArrays& a) : x(a.x), y(a.y) {
    OSPREY_CHECK(x.defined() && y.defined(),
                 "validation_data: labeled arrays need both x and y. Received: x {}, y {}",
                 x.defined() ? "defined" : "undefined", y.defined() ? "defined" : "undefined");
  }
  Tensor x, y;
  std::optional<data::Dataset> dataset;
};

struct FitOptions {
  int64_t batch_size = 32;  // for tensor inputs; a dataset brings its own batches
  int epochs = 1;
  int verbose =
      1;  // 0 silent, 1 progress bar (one line per epoch off a terminal), 2 one line per epoch
  std::vector<CallbackPtr> callbacks{};
  double validation_split = 0.0;  // the last fraction of x/y, before shuffling, as Keras
  std::optional<ValidationData> validation_data{};
  bool shuffle = true;
  int initial_epoch = 0;
  int64_t steps_per_epoch = -1;  // -1: one pass over the data
  int64_t validation_batch_size = -1;
  std::optional<uint64_t> seed{};  // shuffling; default from the global seed
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 0;
  std::vector<CallbackPtr> callbacks{};
  int64_t steps = -1;
};

struct PredictOptions {
  int64_t batch_size = 32;
  int verbose = 0;
  std::vector<CallbackPtr> callbacks{};
};

// Per-epoch logs of a fit: history.history["val_loss"][epoch], as Keras.
class History : public Callback {
 public:
  void on_train_begin(const Logs&) override {}
  void on_epoch_end(int epoch, const Logs& logs) override;
  std::map<std::string, std::vector<double>> history;
  std::vector<int> epoch;
};

}  // namespace osprey::train
