// `osprey quantize DIR --mode int8|float8 [--output OUT]`: loads a model saved by `osprey train`
// (or Model::save), swaps its layers (quant/quantize.h: int8 Dense, Conv2D and Embedding layers
// for inference, or float8-training Dense and Conv2D layers with --amax-history-length and
// --margin) and saves it to OUT, atomically. OUT defaults to DIR_int8 or DIR_float8 beside DIR:
// the float32 model, its optimizer state and history stay, and a folder is replaced (DIR itself
// included) only when --output names it. A tokenizer.json beside the model (a GPT that
// `osprey train --model gpt` saved) is saved with it, so `osprey generate OUT` runs the int8 GPT.
// Prints the quantized kernel paths and the sizes.
#include "osprey/quant/quantize.h"

#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/io/json.h"
#include "osprey/train/model.h"

namespace osprey::cli {

namespace {

uintmax_t weights_bytes(const std::filesystem::path& dir) {
  std::error_code ec;
  const uintmax_t n = std::filesystem::file_size(dir / "model.safetensors", ec);
  return ec ? 0 : n;
}

}  // namespace

void add_quantize(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "quantize", "Quantize a saved model: int8 weights for inference, or float8 training layers");
  struct Args {
    std::string dir, mode = "int8", output;
    quant::QuantizeOptions options;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("dir", args->dir, "Directory of a saved model (config.json + model.safetensors)")
      ->required();
  cmd->add_option("--mode", args->mode, "Quantization mode")
      ->check(CLI::IsMember(quant::quantization_modes()));
  cmd->add_option("--amax-history-length", args->options.float8.amax_history_length,
                  "float8: steps of amax history behind each delayed scale")
      ->check(kPositive);
  cmd->add_option("--margin", args->options.float8.margin, "float8: scales divided by 2^margin")
      ->check(kNonNegative);
  cmd->add_option("--output,-o", args->output,
                  "Where to save the quantized model (default: DIR_int8 or DIR_float8; an "
                  "existing folder is replaced only when named here)");
  cmd->callback([args] {
    std::string out = args->output;
    if (out.empty()) {
      std::string base = args->dir;
      while (base.size() > 1 && base.back() == '/') base.pop_back();
      out = base + "_" + args->mode;
      if (std::filesystem::exists(out)) {
        throw UsageError(fmt::format(
            "osprey quantize: {} exists; to replace it, name it: --output {} (or choose another "
            "folder)",
            out, out));
      }
    }
    const uintmax_t before = weights_bytes(args->dir);
    Model model = load_model(args->dir);
    for (const std::string& path : model.quantize(args->mode, args->options))
      fmt::print("quantized {}\n", path);
    models::SaveExtras extras;
    const std::filesystem::path tokenizer = std::filesystem::path(args->dir) / "tokenizer.json";
    if (std::filesystem::exists(tokenizer))
      extras.json_files.emplace_back("tokenizer.json", io::read_json_file(tokenizer));
    model.save(out, extras);
    fmt::print("saved {} ({}): model.safetensors {} -> {} bytes\n", out, args->mode, before,
               weights_bytes(out));
  });
}

}  // namespace osprey::cli
