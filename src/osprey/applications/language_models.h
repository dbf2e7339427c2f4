// Prebuilt language models (like keras_hub's presets: ready-made networks by name) that
// `osprey train --model gpt|lstm`, bench_gpt and the guide's examples share, so "the GPT" or
// "the LSTM" means one network everywhere. Both take token ids [batch, T] and give logits
// [batch, T, vocab_size] for the next token at every position; train them with
// sparse_categorical_crossentropy from logits. Weights are drawn from the global seed; the models
// are built and not compiled.
//   os::Model model = os::applications::gpt(os::applications::gpt_nano_config(65));
//   model.compile(os::optim::AdamW({.learning_rate = 1e-3}), loss_from_logits);
//   os::Model rnn = os::applications::rnn_language_model({.vocab_size = 65, .cell = "gru"});
#pragma once

#include "osprey/models/gpt.h"
#include "osprey/train/model.h"

namespace osprey::applications {

// The GPT (models/gpt.h).
Model gpt(const models::GPTConfig& config, const std::string& name = "");

// nanoGPT's shakespeare_char CPU configuration (4 layers, 4 heads, n_embd 128, block 64,
// dropout 0, no biases) over a vocabulary of vocab_size.
models::GPTConfig gpt_nano_config(int64_t vocab_size);

struct RnnLanguageModelConfig {
  int64_t vocab_size = 65;
  std::string cell = "lstm";  // "lstm", "gru" or "simple_rnn"
  int64_t block_size = 64;    // the sequence length the model is built for
  int64_t embedding_dim = 128;
  int64_t units = 256;
  int64_t layers = 2;
};

// Embedding(vocab_size, embedding_dim) -> LSTM (GRU, SimpleRNN)(units, return_sequences) x layers
// -> Dense(vocab_size), a Sequential named "<cell>_lm". ValueError for non-positive sizes or
// another cell.
Model rnn_language_model(const RnnLanguageModelConfig& config);

}  // namespace osprey::applications
