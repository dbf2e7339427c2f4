#include "cli/train_text.h"

#include <fmt/format.h>

#include <cmath>

#include "cli/report/history.h"
#include "cli/usage_error.h"
#include "osprey/applications/language_models.h"
#include "osprey/data/text/language_model_dataset.h"
#include "osprey/data/text/tokenizer.h"
#include "osprey/io/atomic_directory.h"
#include "osprey/losses/crossentropy.h"

namespace osprey::cli {

bool is_language_model(const std::string& model) { return model == "gpt" || model == "lstm"; }

namespace {

Model make_language_model(const TrainArgs& a, int64_t vocab_size) {
  if (a.model == "gpt") {
    return applications::gpt({.vocab_size = vocab_size,
                              .block_size = a.block_size,
                              .n_layer = a.n_layer,
                              .n_head = a.n_head,
                              .n_embd = a.n_embd,
                              .dropout = a.dropout});
  }
  return applications::rnn_language_model({.vocab_size = vocab_size,
                                           .block_size = a.block_size,
                                           .embedding_dim = a.n_embd,
                                           .units = a.units,
                                           .layers = a.n_layer});
}

}  // namespace

void train_language_model(const TrainArgs& a, TextTrainRun run) {
  OSPREY_CHECK_T(cli::UsageError, !a.data.empty(),
                 "osprey train: --model {} needs --data FILE, a text file to learn from", a.model);
  OSPREY_CHECK_T(cli::UsageError, a.test_data.empty() && a.data_format == "auto",
                 "osprey train: --model {} reads --data as text; --test-data and --data-format "
                 "are for the other models",
                 a.model);
  const std::string text = data::text::read_text_file(a.data);
  const std::unique_ptr<data::text::Tokenizer> tok =
      as_usage_error([&] { return data::text::make_tokenizer(a.tokenizer, text); });
  const Tensor ids = tok->encode_tensor(text);
  // nanoGPT's batch of 12 windows (rounded up to a multiple of the replicas in sync), unless the
  // user chose one, which train.cpp has checked against the replicas like any other.
  const int64_t replicas = run.strategy->num_replicas_in_sync();
  const int64_t batch =
      run.batch_size_given ? run.batch_size : replicas * ((12 + replicas - 1) / replicas);
  const double split = a.validation_split > 0 ? a.validation_split : 0.1;
  auto [train_ids, val_ids] = data::text::split_tokens(ids, 1.0 - split);
  OSPREY_CHECK_T(
      cli::UsageError, val_ids.numel() > a.block_size && train_ids.numel() > a.block_size,
      "osprey train: {} holds {} tokens; with --validation-split {} each part needs more "
      "than --block-size {}",
      a.data, ids.numel(), split, a.block_size);
  const int64_t steps = a.steps_per_epoch > 0 ? a.steps_per_epoch : 250;
  const data::Dataset train_ds =
      data::text::language_model_dataset(
          train_ids,
          {.block_size = a.block_size, .samples_per_epoch = steps * batch, .seed = a.seed})
          .batch(batch);
  const data::Dataset val_ds =
      data::text::language_model_dataset(val_ids, {.block_size = a.block_size}).batch(64);
  Model model = make_language_model(a, tok->vocab_size());
  if (run.chief) {
    fmt::print(
        "data: {} (text, {} tokenizer): {} tokens, vocabulary {}, {} for training, {} held out\n",
        a.data, tok->kind(), ids.numel(), tok->vocab_size(), train_ids.numel(), val_ids.numel());
    fmt::print("{}", model.summary());
  }
  model.compile(run.optimizer,
                std::make_shared<losses::SparseCategoricalCrossentropy>(
                    losses::SparseCategoricalCrossentropyOptions{.from_logits = true}),
                {}, {.strategy = run.strategy});
  auto history = std::make_shared<report::HistoryRecorder>();
  run.callbacks.push_back(history);
  const train::History fitted = model.fit(train_ds, {.epochs = a.epochs,
                                                     .verbose = run.chief ? 1 : 0,
                                                     .callbacks = run.callbacks,
                                                     .validation_data = val_ds,
                                                     .seed = a.seed});
  const double val_loss = fitted.history.at("val_loss").back();
  if (run.chief) {
    fmt::print("validation loss: {:.4f} - perplexity: {:.2f} ({} windows of {} tokens)\n", val_loss,
               std::exp(val_loss), val_ids.numel() / a.block_size, a.block_size);
  }
  if (a.output.empty()) return;
  model.save(a.output, {.json_files = {{"history.json", history->to_json()},
                                       {"tokenizer.json", tok->to_json()}}});
  if (run.chief) {
    fmt::print(
        "saved to {}/ (config.json, model.safetensors, tokenizer.json){}\n", a.output,
        a.model == "gpt" ? fmt::format("; sample it with `osprey generate {}`", a.output) : "");
  }
}

}  // namespace osprey::cli
