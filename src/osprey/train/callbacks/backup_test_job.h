// Test-only helpers for BackupAndRestore: one small training job (an MLP with an unseeded and a
// seeded Dropout unless told otherwise, Adam, 640 Fashion-MNIST images, 20 steps per epoch, 3
// epochs), a callback that "crashes" it at a given step, and a bitwise comparison of weights. A
// relaunch is modelled as a process would do it: the global seed and layer names start over and the
// model is built anew.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/train/callbacks/backup_and_restore.h"
#include "osprey/train/model.h"

namespace osprey::train::testing {

struct Crash : std::runtime_error {
  Crash() : std::runtime_error("simulated crash") {}
};

// Throws Crash at the end of the at-th training batch end it sees (after the callbacks before it
// in the list, a BackupAndRestore among them, have run).
class CrashAt : public Callback {
 public:
  explicit CrashAt(int64_t at) : at_(at) {}
  void on_train_batch_end(int64_t, const Logs&) override {
    if (++seen_ == at_) throw Crash();
  }

 private:
  int64_t at_, seen_ = 0;
};

struct BackupJob {
  std::function<std::shared_ptr<const Strategy>()> strategy;  // null: the default device
  int64_t batch_size = 32;
  int epochs = 3;
  // Unseeded dropout is off under several replicas (concurrent replicas draw from the global
  // stream in thread order), and all dropout for runs compared across device counts (a replica
  // draws its own mask for its rows, so 1 and 2 devices differ).
  bool unseeded_dropout = true;
  bool seeded_dropout = true;

  static const data::LabeledArrays& rows() {
    static const data::LabeledArrays r = [] {
      auto d = datasets::fashion_mnist::load({.flatten = true});
      return data::LabeledArrays{d.train.x.narrow(0, 0, 640).contiguous(),
                                 d.train.y.narrow(0, 0, 640).contiguous()};
    }();
    return r;
  }

  // A fresh process's model: the same seed, the same names, the same initial weights.
  Model build() const {
    set_global_seed(3);
    nn::clear_session();
    std::vector<std::shared_ptr<nn::Layer>> stack{layers::Dense(64, "relu")};
    if (unseeded_dropout) stack.push_back(layers::Dropout(0.2));
    if (seeded_dropout) stack.push_back(layers::Dropout(0.1, {.seed = 7}));
    stack.push_back(layers::Dense(10));
    Model m = Sequential(stack, {.input_shape = {784}});
    CompileOptions options;
    if (strategy) options.strategy = strategy();
    m.compile("adam", "sparse_categorical_crossentropy", {"accuracy"}, options);
    return m;
  }

  History fit(Model& m, std::vector<CallbackPtr> callbacks) const {
    return m.fit(rows().x, rows().y,
                 {.batch_size = batch_size,
                  .epochs = epochs,
                  .verbose = 0,
                  .callbacks = std::move(callbacks),
                  .seed = 11});
  }

  // Runs until the CrashAt callback throws; false when it never did.
  bool fit_until_crash(const std::filesystem::path& dir, const std::string& save_freq,
                       int64_t crash_step) const {
    Model m = build();
    try {
      fit(m, {callbacks::BackupAndRestore(dir, {.save_freq = save_freq}),
              std::make_shared<CrashAt>(crash_step)});
    } catch (const Crash&) {
      return true;
    }
    return false;
  }
};

// Every weight equal bit for bit (and the same count, shapes and names).
inline void expect_bitwise_equal(const Model& a, const Model& b) {
  const auto va = a.variables(), vb = b.variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_EQ(va[i].name(), vb[i].name());
    const Tensor ta = va[i].value().contiguous(), tb = vb[i].value().contiguous();
    ASSERT_EQ(ta.shape(), tb.shape()) << va[i].name();
    ASSERT_EQ(ta.nbytes(), tb.nbytes()) << va[i].name();
    EXPECT_EQ(std::memcmp(ta.raw_data(), tb.raw_data(), ta.nbytes()), 0)
        << va[i].name() << " differs";
  }
}

}  // namespace osprey::train::testing
