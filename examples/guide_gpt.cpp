#include <osprey/osprey.h>

#include <cmath>
#include <cstdio>
namespace os = osprey;
namespace text = os::data::text;

// nanoGPT's Shakespeare model, character level: trained for a few hundred steps, then sampled.
int main(int argc, char** argv) {
  os::set_global_seed(1337);
  const std::string corpus = text::read_text_file(argc > 1 ? argv[1] : "data/tinyshakespeare.txt");
  const auto tokenizer = text::CharTokenizer::fit(corpus);  // 65 characters
  auto [train_ids, val_ids] = text::split_tokens(tokenizer.encode_tensor(corpus), 0.9);

  // Random windows of 64 characters, each with the next character at every position.
  const int64_t block = 64, batch = 12;
  auto train = text::language_model_dataset(
                   train_ids, {.block_size = block, .samples_per_epoch = 100 * batch, .seed = 1337})
                   .batch(batch);
  auto val = text::language_model_dataset(val_ids, {.block_size = block, .stride = 512}).batch(64);

  os::Model model = os::applications::gpt(os::applications::gpt_nano_config(65));
  auto adamw = std::make_shared<os::optim::AdamW>(os::optim::AdamWOptions{
      .learning_rate = 2e-3, .weight_decay = 0.1, .beta_2 = 0.99, .global_clipnorm = 1.0});
  adamw->exclude_from_weight_decay({"gamma"});  // decay matrices, not LayerNorm scales
  model.compile(adamw, std::make_shared<os::losses::SparseCategoricalCrossentropy>(
                           os::losses::SparseCategoricalCrossentropyOptions{.from_logits = true}));
  model.fit(train, {.epochs = 3, .verbose = 2, .validation_data = val});
  const double val_loss = model.evaluate(val).at("loss");
  std::printf("validation loss %.3f (uniform guessing: ln 65 = %.3f)\n", val_loss, std::log(65.0));

  // Sampling: 200 characters after a prompt, with the key/value cache and without it.
  auto& gpt = dynamic_cast<os::models::GPT&>(model.network());
  const std::vector<int64_t> prompt = tokenizer.encode("ROMEO:");
  const os::Tensor ids = os::from_vector<int64_t>(prompt, {1, static_cast<int64_t>(prompt.size())});
  os::models::GenerateOptions sampling{
      .max_new_tokens = 200, .temperature = 0.8, .top_k = 20, .seed = 7};
  const os::Tensor cached = os::models::generate(gpt, ids, sampling);
  sampling.use_cache = false;
  const os::Tensor uncached = os::models::generate(gpt, ids, sampling);
  std::printf("%s\n", tokenizer.decode(cached.to_vector<int64_t>()).c_str());
  if (val_loss < 2.6 && cached.to_vector<int64_t>() == uncached.to_vector<int64_t>())
    std::printf("the GPT learns and generates the same text with and without its cache\n");
}
