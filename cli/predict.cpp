// `osprey predict DIR [--count N] [--data D]`: loads a model saved by `osprey train` (or
// Model::save) and prints its predicted class, that class's probability and the true class for
// the first N Fashion-MNIST test images.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "cli/saved_model_command.h"
#include "cli/subcommands.h"
#include "cli/validators.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/tensor/ops.h"

namespace osprey::cli {

void add_predict(CLI::App& app) {
  auto count = std::make_shared<int64_t>(10);
  CLI::App* cmd = add_saved_model_command(
      app, "predict", "Print a saved model's predictions for the first test images",
      [count](SavedModelRun& run) {
        const int64_t n = std::min<int64_t>(*count, run.test.x.size(0));
        const Tensor probs = run.model.predict(run.test.x.narrow(0, 0, n), {.batch_size = 256});
        const Tensor classes = argmax(probs, -1);
        for (int64_t i = 0; i < n; ++i) {
          const auto c = static_cast<int64_t>(classes.at({i}));
          fmt::print("{}: predicted {} ({}), p={:.3f}, true {}\n", i, c,
                     datasets::fashion_mnist::kClassNames[c], probs.at({i, c}),
                     static_cast<int64_t>(run.test.y.at({i})));
        }
      });
  cmd->add_option("--count", *count, "How many test images")->check(kPositive);
}

}  // namespace osprey::cli
