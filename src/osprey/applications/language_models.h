// Prebuilt language models (like keras_hub's presets: ready-made networks by name) that
// `osprey train --model gpt|lstm`, bench_gpt and the guide's examples share, so "the GPT" or
// "the LSTM" means one network everywhere. Both take token ids [batch, T] and give logits
// [batch, T, vocab_size] for the next token at every position; train them with
// sparse_categorical_crossentropy from logits. Weights are drawn from the global seed; the models
// are built and not compiled.
//   os::Model model = os::applications::gpt(os::applications::gpt_nano_config(65));
//   model.compile(os::optim::AdamW({.learning_rate = 1e-3}), loss_from_logits);
//   os::Model rnn = os::applications::lstm_language_model({.vocab_size = 65, .block_size = 64});
#pragma once

#include "osprey/models/gpt.h"
#include "osprey/train/model.h"

namespace osprey::applications {

// The GPT (models/gpt.h).
Model gpt(const models::GPTConfig& config, const std::string& name = "");

// nanoGPT's shakespeare_char CPU configuration (4 layers, 4 heads, n_embd 128, block 64,
// dropout 0, no biases) over a vocabulary of vocab_size.
models::GPTConfig gpt_nano_config(int64_t vocab_size);

struct LstmLanguageModelConfig {
  int64_t vocab_size = 65;
  int64_t block_size = 64;  // the sequence length the model is built for
  int64_t embedding_dim = 128;
  int64_t units = 256;
  int64_t layers = 2;
};

// Embedding(vocab_size, embedding_dim) -> LSTM(units, return_sequences) x layers ->
// Dense(vocab_size), a Sequential named "lstm_lm". ValueError for non-positive sizes.
Model lstm_language_model(const LstmLanguageModelConfig& config);

}  // namespace osprey::applications
