// `osprey quantize DIR --mode int8 [--output OUT]`: loads a model saved by `osprey train` (or
// Model::save), swaps its Dense, Conv2D and Embedding layers for int8 ones (quant/quantize.h) and
// saves it to OUT (default: DIR, replaced atomically). Prints the quantized kernel paths and the
// sizes.
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "cli/subcommands.h"
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
  auto* cmd = app.add_subcommand("quantize", "Quantize a saved model for inference (int8 weights)");
  struct Args {
    std::string dir, mode = "int8", output;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("dir", args->dir, "Directory of a saved model (config.json + model.safetensors)")
      ->required();
  cmd->add_option("--mode", args->mode, "Quantization mode")->check(CLI::IsMember({"int8"}));
  cmd->add_option("--output,-o", args->output, "Where to save the quantized model (default: DIR)");
  cmd->callback([args] {
    const std::string out = args->output.empty() ? args->dir : args->output;
    const uintmax_t before = weights_bytes(args->dir);
    Model model = load_model(args->dir);
    for (const std::string& path : model.quantize(args->mode)) fmt::print("quantized {}\n", path);
    model.save(out);
    fmt::print("saved {} ({}): model.safetensors {} -> {} bytes\n", out, args->mode, before, weights_bytes(out));
  });
}

}  // namespace osprey::cli
