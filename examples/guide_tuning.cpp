#include <osprey/osprey.h>

#include <cstdio>
namespace os = osprey;

os::Model build_model(os::tune::HyperParameters& hp) {
  auto model = os::Sequential(
      {os::layers::Flatten(), os::layers::Dense(hp.Int("units", 32, 256, {.step = 32}), "relu"),
       os::layers::Dense(10, "softmax")},
      {.input_shape = {28, 28}});
  model.compile(hp.Choice("optimizer", {"adam", "rmsprop", "sgd"}),
                "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

// One process tunes alone; `osprey launch --tuners 2 -- build/examples/example_guide_tuning`
// runs the same program as a chief that serves the oracle and two workers that train the trials,
// one trial per process.
int main() {
  auto data = os::datasets::fashion_mnist::load();
  auto [train, val] = data.train.split_tail(10000);
  train = train.slice(0, 3000);
  val = val.slice(0, 1000);

  // ASHA: a configuration trains 1 epoch, the best third of each rung goes on to 3, then 9,
  // without waiting for the rest of its rung; the median pruner stops laggards early.
  os::tune::Asha tuner(build_model, {.objective = "val_accuracy",
                                     .max_epochs = 9,
                                     .factor = 3,
                                     .max_trials = 12,
                                     .directory = "guide_tuning",
                                     .project_name = "asha",
                                     .overwrite = true,
                                     .pruner = {.kind = os::tune::PrunerKind::median}});
  const os::tune::StudyEnd end =
      tuner.search(train.x, train.y,
                   {.batch_size = 128,
                    .epochs = 9,
                    .verbose = 0,
                    .validation_data = os::train::ValidationData(val.x, val.y)});
  // A launched worker that ran its share of trials makes way for a fresh process.
  if (end == os::tune::StudyEnd::share_done) return os::tune::kExitNextTrial;
  if (tuner.role().is_worker()) return 0;  // the chief, or a lone tuner, reports the result

  const auto best = tuner.oracle().get_best_trials(1).at(0);
  std::printf("best trial %s: units=%lld optimizer=%s val_accuracy=%.4f\n", best.trial_id.c_str(),
              static_cast<long long>(best.hyperparameters.get("units").as_int()),
              best.hyperparameters.get("optimizer").as_string().c_str(), *best.score);
  return 0;
}
