// What `osprey evaluate` and `osprey predict` share: a subcommand that loads a saved model (DIR,
// written by `osprey train` or Model::save) and the Fashion-MNIST test split (--data), then
// hands both to its body. --data is `osprey train`'s option too.
//   add_saved_model_command(app, "evaluate", "Evaluate ...", [](const SavedModelRun& run) {
//     fmt::print("{}\n", run.model.evaluate(run.test.x, run.test.y).format());
//   });
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "osprey/data/labeled_arrays.h"
#include "osprey/train/model.h"

namespace osprey::cli {

// --data: the directory with the Fashion-MNIST IDX files ("": the usual places).
void add_data_option(CLI::App& cmd, std::string& directory);

// What the body of a saved-model subcommand gets.
struct SavedModelRun {
  std::string dir;           // as given
  Model model;               // loaded from dir (compiled when it was saved compiled)
  data::LabeledArrays test;  // x: float32 [10000, 28, 28], y: int64 [10000]
};

// Adds subcommand `name` with DIR and --data, running `body` once the model and data are loaded
// (the model first, so a bad DIR fails before the data are read). Returns it for more options.
CLI::App* add_saved_model_command(CLI::App& app, const std::string& name,
                                  const std::string& description,
                                  std::function<void(SavedModelRun& run)> body);

}  // namespace osprey::cli
