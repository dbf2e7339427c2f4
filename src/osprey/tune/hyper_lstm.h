// HyperLSTM: a prebuilt hypermodel for token ids [batch, sequence_length] (ints in
// [0, vocab_size)), a recurrent network, each part under hyperparameters:
//   Embedding(vocab_size, embed_dim)
//   -> num_layers x { LSTM or GRU(units) [inside Bidirectional (concat): classification only]
//                     -> Dropout(dropout) }
//   classification: the last recurrent layer gives its final state -> Dense(num_classes,
//                   softmax), compiled with sparse_categorical_crossentropy and accuracy;
//   language_model: every layer gives the whole sequence -> Dense(vocab_size): logits of the
//                   next token at every position [batch, T, vocab_size], compiled with
//                   sparse_categorical_crossentropy from logits and accuracy (of the next token).
// A language model reads left to right only, so its space has no `bidirectional`. Dropout is a
// layer between the recurrent ones, not recurrent_dropout: a mask on the state entering each
// step makes the layer run step by step (nn/layers/recurrent.h).
// The defaults (a build with no trial values) are one LSTM of 64 units over embed_dim 64
// (bidirectional for classification), dropout 0.2, adam at 1e-3: as a language model of Tiny
// Shakespeare's characters (vocabulary 65, sequence_length 64, batch 32) that is 41 k parameters,
// and 300 steps take the validation loss to 2.59 (the uniform guess is ln 65 = 4.17), at about a
// quarter of HyperTransformer's default time per step. Three layers of 256 units over embed_dim
// 256 are about 50x the default's recurrent compute.
//   tune::RandomSearch tuner(std::make_shared<tune::HyperLSTM>(
//                                tune::HyperLSTMOptions{.vocab_size = 65,
//                                                       .sequence_length = 64,
//                                                       .task = "language_model"}),
//                            {.objective = "val_loss", .max_trials = 10});
// `fixed` fixes or narrows hyperparameters as HyperMLP's does (hyper_mlp.h):
//   tune::HyperParameters fixed;
//   fixed.set("cell", "gru");                                // a value fixes
//   fixed.Int("units", 64, 128, {.step = 64});               // a declaration narrows
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "osprey/tune/hypermodel.h"

namespace osprey::tune {

struct HyperLSTMOptions {
  int64_t vocab_size = 0;       // token ids lie in [0, vocab_size); at least 2
  int64_t sequence_length = 0;  // tokens per sample
  // "classification" (one label per sequence) or "language_model" (the next token at every
  // position; hyper_text.h).
  std::string task = "classification";
  int num_classes = 0;  // classification: at least 2; language_model: 0
  std::optional<HyperParameters> fixed{};
};

class HyperLSTM : public HyperModel {
 public:
  // ValueError for a bad vocab_size, sequence_length, task or num_classes (hyper_text.h) or a
  // `fixed` entry the model cannot use.
  explicit HyperLSTM(HyperLSTMOptions options);
  Model build(HyperParameters& hp) override;
  const HyperLSTMOptions& options() const { return options_; }

 private:
  HyperLSTMOptions options_;
};

}  // namespace osprey::tune
