// `osprey train --model gpt|lstm --data FILE.txt`: a language model on a text file, the path of
// `osprey train` for text (train.cpp hands over once its strategy, optimizer and callbacks are
// made). The text is tokenized (--tokenizer char|byte|bpe:N|unigram:N), split 90/10
// (--validation-split), and fit on random windows of --block-size tokens (nanoGPT's batches); the
// model is saved with its tokenizer (tokenizer.json), which `osprey generate DIR` reads.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/train_setup.h"
#include "osprey/data/dataset.h"
#include "osprey/data/text/tokenizer.h"
#include "osprey/optim/optimizer.h"
#include "osprey/train/callback.h"

namespace osprey::cli {

// --model values that name a language model.
bool is_language_model(const std::string& model);

// --tokenizer SPEC (char|byte|bpe:N|unigram:N, data::text::parse_tokenizer_spec), checked as it
// is parsed; `what` says which commands read it.
CLI::Option* add_tokenizer_option(CLI::App& cmd, std::string& spec, const std::string& what);

// How a text file becomes language-model datasets: `osprey train --model gpt|lstm` and `osprey
// tune --hypermodel transformer|lstm` read text the same way.
struct TextDataOptions {
  std::string command;    // "osprey train", first in messages
  std::string path;       // --data
  std::string tokenizer;  // --tokenizer
  int64_t block_size = 64;
  double validation_split = 0.1;  // the last fraction of the tokens, held out
  int64_t batch_size = 12;
  int64_t train_windows = 0;  // random windows per epoch (nanoGPT's batches), drawn from `seed`
  int64_t val_windows = 0;    // 0: every non-overlapping window of the held-out tokens
  uint64_t seed = 42;
};

struct TextData {
  std::unique_ptr<data::text::Tokenizer> tokenizer;
  int64_t tokens = 0, train_tokens = 0, val_tokens = 0;
  data::Dataset train;  // batches of batch_size windows: x [batch, T], y (x shifted by one)
  data::Dataset val;    // batches of 64 windows
  // "data: FILE (text, char tokenizer): N tokens, vocabulary V, ..." for the command to print.
  std::string summary;
};

// Reads and tokenizes the file, splits it and makes the datasets. UsageError for a tokenizer spec
// the text cannot give (data::text::make_tokenizer) and for a part no longer than block_size.
TextData load_text_data(const TextDataOptions& options);

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
