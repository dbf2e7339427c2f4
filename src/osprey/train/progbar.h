// The Keras progress bar, as a callback fit adds when verbose > 0:
//   Epoch 1/3
//   469/469 [==============================] - 3s 6ms/step - loss: 0.4210 - accuracy: 0.8512
// On a terminal the bar redraws in place (at most every 50 ms); otherwise, and with verbose=2,
// it prints one line per epoch, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "osprey/train/callback.h"

namespace osprey::train {

class ProgbarLogger : public Callback {
 public:
  // out: where to print (stdout by default); interactive: redraw in place (default: isatty(out)).
  explicit ProgbarLogger(std::FILE* out = stdout, int interactive = -1);
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;

  // The bar line for step `done` of `total` (-1 unknown) after `seconds`.
  static std::string format_line(int64_t done, int64_t total, double seconds, const Logs& logs);

 private:
  void draw(int64_t done, const Logs& logs, bool final);
  std::FILE* out_;
  bool interactive_;
  int64_t seen_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace osprey::train
