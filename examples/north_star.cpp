// The north-star listing of DESIGN.md, as written there: tune a Fashion-MNIST classifier with
// Bayesian optimization under the mixed_bfloat16 policy, retrain the best configuration under
// MirroredStrategy, quantize it to int8 and save it to fmnist_best/ (config.json and
// model.safetensors). It writes fmnist_kt/ and fmnist_best/ in the working directory.
// main() is the listing, but for its sizes, which are named constants (below) so that CI can run
// it small, and the load() options (see there).
#include <osprey/osprey.h>

#include <cstdlib>  // the preamble's getenv
#include <string_view>
namespace os = osprey;

// ---- Not part of the listing: the sizes, and the one switch CI uses to shrink them. ----------
// OSPREY_EXAMPLE_SMALL=1 keeps every step but validates on 200 rows, runs two trials of one
// execution for two epochs and retrains for one. CI also points OSPREY_DATA_DIR (read by
// fashion_mnist::load) at the first 1,200 training images, written by fashion_mnist_subset.py,
// so the run takes a few seconds; on the whole training set it takes 10-30 s on 2 cores.
namespace {
bool small_run() {
  const char* v = std::getenv("OSPREY_EXAMPLE_SMALL");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}
const bool kSmall = small_run();
const int64_t kValidationRows = kSmall ? 200 : 10000;  // data.train.split_tail(10000)
const int kMaxTrials = kSmall ? 2 : 20;
const int kExecutionsPerTrial = kSmall ? 1 : 2;
const int kSearchEpochs = kSmall ? 2 : 100;
const int kFitEpochs = kSmall ? 1 : 20;
}  // namespace
// ---- The listing (its layout kept as DESIGN.md has it). ----------------------------------------
// clang-format off

os::Model build_model(os::tune::HyperParameters& hp) {
  auto model = os::Sequential({
      os::layers::Dense(hp.Int("units", 16, 64, {.step = 16}), "relu"),
      os::layers::Dense(10, "softmax", {.dtype = "float32"}),  // output stays f32
  });
  model.compile(hp.Choice("optimizer", {"rmsprop", "adam"}),
                "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

int main() {
  os::config::set_dtype_policy("mixed_bfloat16");
  // The listing's load() gives images [N, 28, 28], which Dense maps to [N, 28, units] (it acts
  // on the last axis, as Keras's); the first layer needs rows [N, 784].
  auto data = os::datasets::fashion_mnist::load({.flatten = true});  // dataset-fashion-mnist
  auto [train, val] = data.train.split_tail(kValidationRows);

  os::tune::BayesianOptimization tuner(build_model, {.objective = "val_accuracy",
      .max_trials = kMaxTrials, .executions_per_trial = kExecutionsPerTrial,
      .directory = "fmnist_kt", .overwrite = true});
  tuner.search(train, {.batch_size = 128, .epochs = kSearchEpochs,
      .callbacks = {os::callbacks::EarlyStopping({.monitor = "val_loss", .patience = 5})},
      .validation_data = val});
  auto best = tuner.get_best_hyperparameters(4);

  os::distribute::MirroredStrategy strategy;                 // every local device
  os::Model model;
  {
    auto scope = strategy.scope();                           // variables created here are mirrored
    model = build_model(best[0]);
  }
  model.fit(train.batch(64 * strategy.num_replicas_in_sync()).prefetch(os::data::kAutotune),
            {.epochs = kFitEpochs, .validation_data = val});
  model.quantize("int8");
  model.save("fmnist_best");                                 // config.json + model.safetensors
}
// clang-format on
