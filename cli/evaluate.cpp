// `osprey evaluate DIR [--data D]`: loads a model saved by `osprey train` (or Model::save) and
// prints its loss and metrics on the Fashion-MNIST test split.
#include <fmt/format.h>

#include "cli/saved_model_command.h"
#include "cli/subcommands.h"

namespace osprey::cli {

void add_evaluate(CLI::App& app) {
  add_saved_model_command(app, "evaluate", "Evaluate a saved model on the Fashion-MNIST test split",
                          [](SavedModelRun& run) {
                            const train::Logs logs =
                                run.model.evaluate(run.test.x, run.test.y, {.batch_size = 256});
                            fmt::print("{}: test{}\n", run.dir, logs.format());
                          });
}

}  // namespace osprey::cli
