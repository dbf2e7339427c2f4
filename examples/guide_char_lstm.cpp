#include <osprey/osprey.h>

#include <cmath>
#include <cstdio>
namespace os = osprey;
namespace text = os::data::text;

// A character-level LSTM language model: the next character at every position of 64.
int main(int argc, char** argv) {
  os::set_global_seed(7);
  const std::string corpus = text::read_text_file(argc > 1 ? argv[1] : "data/tinyshakespeare.txt");
  const auto tokenizer = text::ByteTokenizer();  // any bytes: 256 ids
  auto [train_ids, val_ids] = text::split_tokens(tokenizer.encode_tensor(corpus), 0.9);
  auto train = text::language_model_dataset(
                   train_ids, {.block_size = 64, .samples_per_epoch = 80 * 32, .seed = 7})
                   .batch(32);
  auto val = text::language_model_dataset(val_ids, {.block_size = 64, .stride = 1024}).batch(64);

  // Embedding(256, 64) -> LSTM(256, return_sequences) x 2 -> Dense(256)
  os::Model model = os::applications::rnn_language_model(
      {.vocab_size = 256, .block_size = 64, .embedding_dim = 64, .units = 256, .layers = 2});
  model.compile(std::make_shared<os::optim::Adam>(os::optim::AdamOptions{.learning_rate = 3e-3}),
                std::make_shared<os::losses::SparseCategoricalCrossentropy>(
                    os::losses::SparseCategoricalCrossentropyOptions{.from_logits = true}));
  model.fit(train, {.epochs = 3, .verbose = 2, .validation_data = val});
  const double val_loss = model.evaluate(val).at("loss");
  std::printf("validation loss %.3f, perplexity %.1f over 256 byte values\n", val_loss,
              std::exp(val_loss));
  if (val_loss < 2.9) std::printf("the LSTM learns the text\n");
}
