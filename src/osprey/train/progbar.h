// The Keras progress bar, as a callback fit adds when verbose > 0:
//   Epoch 1/3
//   469/469 [==============================] - 3s 6ms/step - loss: 0.4210 - accuracy: 0.8512
// On a terminal the bar redraws in place (at most every 50 ms); otherwise, and with verbose=2,
// it prints one line per epoch (Keras's verbose=2), so logs stay readable. Under mpirun stdout is
// a pseudo-terminal whose lines end up in a log: one line per epoch there too. A bar line left
// open (an error ended fit mid-epoch) is ended before anything else is printed: the destructor
// does it, and a program that prints an error calls end_open_line() first.
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
  ~ProgbarLogger() override;
  ProgbarLogger(const ProgbarLogger&) = delete;
  ProgbarLogger& operator=(const ProgbarLogger&) = delete;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  // Whether a bar on `out` redraws in place: `out` is a terminal and not the pseudo-terminal an
  // MPI launcher (Open MPI's mpirun, a PMI or PMIx one) gives its ranks, whose output it relays
  // into files and pipes line by line.
  static bool draws_in_place(std::FILE* out);
  // Ends the line a bar left open (drawn in place, its epoch not ended) with a newline, so what
  // is printed next (an error) starts on its own line. Nothing when none is open.
  static void end_open_line();

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
