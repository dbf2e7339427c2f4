#include "osprey/applications/language_models.h"

#include "osprey/nn/layers/dense.h"
#include "osprey/nn/layers/embedding.h"
#include "osprey/nn/layers/recurrent.h"

namespace osprey::applications {

Model gpt(const models::GPTConfig& config, const std::string& name) {
  return Model(std::make_shared<models::GPT>(config, name));
}

models::GPTConfig gpt_nano_config(int64_t vocab_size) {
  return {.vocab_size = vocab_size, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128};
}

Model rnn_language_model(const RnnLanguageModelConfig& c) {
  OSPREY_CHECK(
      c.vocab_size > 0 && c.block_size > 0 && c.embedding_dim > 0 && c.units > 0 && c.layers > 0,
      "rnn_language_model: vocab_size, block_size, embedding_dim, units and layers must "
      "be positive. Received: {}, {}, {}, {}, {}",
      c.vocab_size, c.block_size, c.embedding_dim, c.units, c.layers);
  std::vector<std::shared_ptr<nn::Layer>> layers = {
      layers::Embedding(c.vocab_size, c.embedding_dim)};
  OSPREY_CHECK(c.cell == "lstm" || c.cell == "gru" || c.cell == "simple_rnn",
               "rnn_language_model: cell must be lstm, gru or simple_rnn. Received: '{}'", c.cell);
  for (int64_t i = 0; i < c.layers; ++i) {
    const nn::RecurrentOptions o{.return_sequences = true};
    if (c.cell == "lstm") layers.push_back(layers::LSTM(c.units, o));
    if (c.cell == "gru") layers.push_back(layers::GRU(c.units, o));
    if (c.cell == "simple_rnn") layers.push_back(layers::SimpleRNN(c.units, o));
  }
  layers.push_back(layers::Dense(c.vocab_size));
  return Model(std::make_shared<models::Sequential>(
      layers, models::SequentialOptions{.name = c.cell + "_lm", .input_shape = {c.block_size}}));
}

}  // namespace osprey::applications
