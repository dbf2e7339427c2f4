#include "cli/train_text.h"

#include <fmt/format.h>

#include <algorithm>
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

CLI::Option* add_tokenizer_option(CLI::App& cmd, std::string& spec, const std::string& what) {
  return cmd
      .add_option("--tokenizer", spec,
                  what +
                      ": char (the text's characters, fitted on it), byte (256 ids), or bpe:N or "
                      "unigram:N (N SentencePiece subwords, trained on the text, N > 258); saved "
                      "with the model as tokenizer.json")
      ->check(CLI::Validator(
          [](const std::string& text) {
            try {
              data::text::parse_tokenizer_spec(text);
              return std::string();
            } catch (const ValueError& e) {
              // CLI11 puts the option's name first: "--tokenizer: expected char, byte, ...".
              return std::string(e.what()).substr(std::string_view("tokenizer: ").size());
            }
          },
          "char|byte|bpe:N|unigram:N"));
}

TextData load_text_data(const TextDataOptions& o) {
  TextData d;
  const std::string text = data::text::read_text_file(o.path);
  d.tokenizer = as_usage_error([&] { return data::text::make_tokenizer(o.tokenizer, text); });
  const Tensor ids = d.tokenizer->encode_tensor(text);
  auto [train_ids, val_ids] = data::text::split_tokens(ids, 1.0 - o.validation_split);
  OSPREY_CHECK_T(
      cli::UsageError, val_ids.numel() > o.block_size && train_ids.numel() > o.block_size,
      "{}: {} holds {} tokens; with --validation-split {} each part needs more than --block-size "
      "{}",
      o.command, o.path, ids.numel(), o.validation_split, o.block_size);
  d.summary = fmt::format(
      "data: {} (text, {} tokenizer): {} tokens, vocabulary {}, {} for training, {} "
      "held out\n",
      o.path, d.tokenizer->kind(), ids.numel(), d.tokenizer->vocab_size(), train_ids.numel(),
      val_ids.numel());
  // Non-overlapping validation windows need T + 1 tokens for the first and T more for each next.
  if (o.val_windows > 0)
    val_ids = val_ids.narrow(0, 0, std::min(val_ids.numel(), o.val_windows * o.block_size + 1));
  d.tokens = ids.numel();
  d.train_tokens = train_ids.numel();
  d.val_tokens = val_ids.numel();
  d.train = data::text::language_model_dataset(
                train_ids,
                {.block_size = o.block_size, .samples_per_epoch = o.train_windows, .seed = o.seed})
                .batch(o.batch_size);
  d.val = data::text::language_model_dataset(val_ids, {.block_size = o.block_size}).batch(64);
  return d;
}

void train_language_model(const TrainArgs& a, TextTrainRun run) {
  OSPREY_CHECK_T(cli::UsageError, !a.data.empty(),
                 "osprey train: --model {} needs --data FILE, a text file to learn from", a.model);
  OSPREY_CHECK_T(cli::UsageError, a.test_data.empty() && a.data_format == "auto",
                 "osprey train: --model {} reads --data as text; --test-data and --data-format "
                 "are for the other models",
                 a.model);
  // nanoGPT's batch of 12 windows (rounded up to a multiple of the replicas in sync), unless the
  // user chose one, which train.cpp has checked against the replicas like any other.
  const int64_t replicas = run.strategy->num_replicas_in_sync();
  const int64_t batch =
      run.batch_size_given ? run.batch_size : replicas * ((12 + replicas - 1) / replicas);
  const int64_t steps = a.steps_per_epoch > 0 ? a.steps_per_epoch : 250;
  TextData text =
      load_text_data({.command = "osprey train",
                      .path = a.data,
                      .tokenizer = a.tokenizer,
                      .block_size = a.block_size,
                      .validation_split = a.validation_split > 0 ? a.validation_split : 0.1,
                      .batch_size = batch,
                      .train_windows = steps * batch,
                      .seed = a.seed});
  const std::unique_ptr<data::text::Tokenizer>& tok = text.tokenizer;
  Model model = make_language_model(a, tok->vocab_size());
  if (run.chief) fmt::print("{}{}", text.summary, model.summary());
  model.compile(run.optimizer,
                std::make_shared<losses::SparseCategoricalCrossentropy>(
                    losses::SparseCategoricalCrossentropyOptions{.from_logits = true}),
                {}, {.strategy = run.strategy});
  auto history = std::make_shared<report::HistoryRecorder>();
  run.callbacks.push_back(history);
  const train::History fitted = model.fit(text.train, {.epochs = a.epochs,
                                                       .verbose = run.chief ? 1 : 0,
                                                       .callbacks = run.callbacks,
                                                       .validation_data = text.val,
                                                       .seed = a.seed});
  const double val_loss = fitted.history.at("val_loss").back();
  if (run.chief) {
    fmt::print("validation loss: {:.4f} - perplexity: {:.2f} ({} windows of {} tokens)\n", val_loss,
               std::exp(val_loss), text.val_tokens / a.block_size, a.block_size);
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
