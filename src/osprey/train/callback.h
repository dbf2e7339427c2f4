// Callback: hooks into fit/evaluate/predict, with Keras's names and call order:
// on_train_begin, then per epoch on_epoch_begin / on_train_batch_begin / on_train_batch_end /
// (validation: on_test_*) / on_epoch_end, then on_train_end. A callback sees the model
// through set_model() and may stop training (model.stop_training() = true).
//   struct PrintLoss : train::Callback {
//     void on_epoch_end(int epoch, const train::Logs& logs) override {
//       fmt::print("epoch {}: {}\n", epoch, logs.at("loss"));
//     }
//   };
#pragma once

#include <memory>
#include <vector>

#include "osprey/train/logs.h"

namespace osprey::train {

class Model;

class Callback {
 public:
  virtual ~Callback() = default;
  // Called by fit/evaluate/predict before any hook; the model outlives the call.
  virtual void set_model(Model* model) { model_ = model; }
  Model& model() const;

  virtual void on_train_begin(const Logs& logs) {}
  virtual void on_train_end(const Logs& logs) {}
  virtual void on_epoch_begin(int epoch, const Logs& logs) {}
  virtual void on_epoch_end(int epoch, const Logs& logs) {}
  virtual void on_train_batch_begin(int64_t batch, const Logs& logs) {}
  virtual void on_train_batch_end(int64_t batch, const Logs& logs) {}
  virtual void on_test_begin(const Logs& logs) {}
  virtual void on_test_end(const Logs& logs) {}
  virtual void on_test_batch_begin(int64_t batch, const Logs& logs) {}
  virtual void on_test_batch_end(int64_t batch, const Logs& logs) {}
  virtual void on_predict_begin(const Logs& logs) {}
  virtual void on_predict_end(const Logs& logs) {}
  virtual void on_predict_batch_begin(int64_t batch, const Logs& logs) {}
  virtual void on_predict_batch_end(int64_t batch, const Logs& logs) {}

  // Steps per epoch and epochs of the current fit (steps -1 when unknown), set before
  // on_train_begin; the progress bar reads them.
  struct Params {
    int epochs = 1;
    int64_t steps = -1;
    int verbose = 1;
  };
  virtual void set_params(const Params& params) { params_ = params; }
  const Params& params() const { return params_; }

  // A fresh copy for another fit (a tuner gives each trial its own EarlyStopping), or nullptr
  // when the callback cannot be copied and is shared instead.
  virtual std::shared_ptr<Callback> clone() const { return nullptr; }

 private:
  Model* model_ = nullptr;
  Params params_;
};

using CallbackPtr = std::shared_ptr<Callback>;

// Calls every callback's hook in order.
class CallbackList {
 public:
  CallbackList(std::vector<CallbackPtr> callbacks, Model* model, const Callback::Params& params);
  template <class Fn>
  void each(Fn&& fn) {
    for (auto& c : callbacks_) fn(*c);
  }

 private:
  std::vector<CallbackPtr> callbacks_;
};

}  // namespace osprey::train
