// `osprey generate DIR --prompt TEXT`: samples text from a language model saved with its
// tokenizer.json beside it and prints the prompt and what follows it: a GPT that `osprey train
// --model gpt` saved, with the key/value cache (it may be int8, `osprey quantize DIR`: its
// quantized layers are registered), or another causal language model over token windows, such as
// `osprey train --model lstm`'s or the best model of `osprey tune --hypermodel transformer|lstm`,
// each step re-running the window (models::generate's Network form).
#include <fmt/format.h>

#include <filesystem>

#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/core/error.h"
#include "osprey/data/text/tokenizer.h"
#include "osprey/io/json.h"
#include "osprey/models/gpt.h"
#include "osprey/models/saving.h"
#include "osprey/quant/quantize.h"
#include "osprey/tensor/factory.h"

namespace osprey::cli {

namespace {

struct GenerateArgs {
  std::string dir, prompt = "\n";
  models::GenerateOptions options{.max_new_tokens = 500, .temperature = 0.8, .top_k = 200};
  bool no_cache = false;
};

void run(const GenerateArgs& a) {
  const std::filesystem::path dir(a.dir);
  quant::register_layers();  // an int8 GPT holds quantized layers
  models::LoadedModel loaded = models::load_model(dir);
  auto* gpt = dynamic_cast<models::GPT*>(loaded.model.get());
  // Any other model must map token ids [batch, T] to logits [batch, T, vocab].
  int64_t block_size = 0, vocab_size = 0;
  if (gpt != nullptr) {
    block_size = gpt->config().block_size;
    vocab_size = gpt->config().vocab_size;
  } else if (loaded.model->num_inputs() == 1 && loaded.model->build_input_shapes().size() == 1) {
    const Shape in = loaded.model->build_input_shapes()[0];
    if (in.ndim() == 2 && in[1] > 0) {
      const Shape logits = loaded.model->compute_output_shape({in});
      if (logits.ndim() == 3 && logits[1] == in[1]) {
        block_size = in[1];
        vocab_size = logits[2];
      }
    }
  }
  OSPREY_CHECK_T(cli::UsageError, block_size > 0,
                 "osprey generate: {} holds a {} model that does not map token ids [batch, T] to "
                 "next-token logits [batch, T, vocab]; generate samples from a language model "
                 "(osprey train --model gpt|lstm, osprey tune --hypermodel transformer|lstm)",
                 a.dir, loaded.model->class_name());
  const std::filesystem::path tok_path = dir / "tokenizer.json";
  OSPREY_CHECK_T(IoError, std::filesystem::exists(tok_path),
                 "osprey generate: {} is missing; the model was not saved by `osprey train --model "
                 "gpt|lstm` or `osprey tune --hypermodel transformer|lstm`, which write its "
                 "tokenizer beside it",
                 tok_path.string());
  const auto tok = data::text::tokenizer_from_json(io::read_json_file(tok_path));
  OSPREY_CHECK_T(IoError, tok->vocab_size() == vocab_size,
                 "osprey generate: {} has {} tokens; the model's vocabulary has {}: they do not "
                 "belong together",
                 tok_path.string(), tok->vocab_size(), vocab_size);
  OSPREY_CHECK_T(cli::UsageError, !a.prompt.empty(), "osprey generate: --prompt must not be empty");
  const std::vector<int64_t> ids = as_usage_error([&] { return tok->encode(a.prompt); });
  const int64_t n = static_cast<int64_t>(ids.size());
  models::GenerateOptions o = a.options;
  o.use_cache = !a.no_cache;
  const Tensor prompt = from_vector<int64_t>(ids, {1, n});
  const Tensor out = as_usage_error([&] {
    return gpt != nullptr ? models::generate(*gpt, prompt, o)
                          : models::generate(*loaded.model, block_size, prompt, o);
  });
  const std::vector<int64_t> all = out.to_vector<int64_t>();
  fmt::print("{}\n", tok->decode(all));
}

}  // namespace

void add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* cmd =
      app.add_subcommand("generate",
                         "Sample text from a language model saved with its tokenizer (`osprey "
                         "train --model gpt|lstm`, `osprey tune --hypermodel transformer|lstm`)");
  cmd->add_option("dir", a->dir, "The saved model's folder")->required();
  cmd->add_option("--prompt", a->prompt, "Text to continue (default: a newline)");
  cmd->add_option("--max-new-tokens", a->options.max_new_tokens, "Tokens to sample")
      ->check(kNonNegative);
  cmd->add_option("--temperature", a->options.temperature,
                  "Softmax temperature; 0 takes the most likely token every step")
      ->check(kNonNegative);
  cmd->add_option("--top-k", a->options.top_k, "Sample among the k most likely tokens (0: all)")
      ->check(kNonNegative);
  cmd->add_option("--top-p", a->options.top_p,
                  "Sample among the most likely tokens holding this probability (1: all)");
  cmd->add_option("--seed", a->options.seed, "Seed of the draws");
  cmd->add_flag("--no-cache", a->no_cache,
                "Re-run the whole context every step instead of using a GPT's key/value cache "
                "(same tokens, slower)");
  cmd->callback([a] { run(*a); });
}

}  // namespace osprey::cli
