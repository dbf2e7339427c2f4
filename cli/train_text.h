// `osprey train --model gpt|lstm --data FILE.txt`: a language model on a text file, the path of
// `osprey train` for text (train.cpp hands over once its strategy, optimizer and callbacks are
// made). The text is tokenized (--tokenizer char|byte|bpe:N|unigram:N), split 90/10
// (--validation-split), and fit on random windows of --block-size tokens (nanoGPT's batches); the
// model is saved with its tokenizer (tokenizer.json), which `osprey generate DIR` reads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/train_setup.h"
#include "osprey/optim/optimizer.h"
#include "osprey/train/callback.h"

namespace osprey::cli {

// --model values that name a language model.
bool is_language_model(const std::string& model);

struct TextTrainRun {
  std::shared_ptr<const train::Strategy> strategy;
  std::shared_ptr<optim::Optimizer> optimizer;
  std::vector<train::CallbackPtr> callbacks;
  int64_t batch_size = 0;
  bool batch_size_given = false;
  bool chief = true;
};

void train_language_model(const TrainArgs& a, TextTrainRun run);

}  // namespace osprey::cli
