#include <osprey/ensemble/ensemble.h>
#include <osprey/osprey.h>

#include <algorithm>
#include <cstdio>
namespace os = osprey;
namespace ens = osprey::ensemble;

os::Model build_model(os::tune::HyperParameters& hp) {
  auto model = os::Sequential({os::layers::Dense(hp.Int("units", 32, 256, {.step = 32}), "relu"),
                               os::layers::Dense(10, "softmax")});
  model.compile(hp.Choice("optimizer", {"adam", "rmsprop"}), "sparse_categorical_crossentropy",
                {"accuracy"});
  return model;
}

int main() {
  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  auto [train, val] = data.train.slice(0, 8000).split_tail(2000);
  os::tune::RandomSearch tuner(build_model, {.objective = "val_accuracy",
                                             .max_trials = 3,
                                             .directory = "guide_ensemble",
                                             .overwrite = true,
                                             .verbose = 0});
  tuner.search(train.x, train.y,
               {.batch_size = 128, .epochs = 3, .verbose = 0, .validation_data = val});

  // The 3 best trials, with their best epoch's weights: no retraining.
  auto ensemble = ens::Ensemble::from_tuner(tuner, 3);
  // Gradient-boosted trees on the pixels: a model that errs differently.
  auto some = train.slice(0, 2000);
  ensemble.add(ens::XGBoostMember::fit_on_inputs(some.x, some.y, /*num_classes=*/10,
                                                 {.num_boost_round = 20, .max_depth = 4}));

  const auto members = ensemble.evaluate_members(data.test.x, data.test.y);
  double best_member = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    std::printf("%-10s test accuracy %.4f\n", ensemble.members()[i]->name().c_str(),
                members[i].at("accuracy"));
    best_member = std::max(best_member, members[i].at("accuracy"));
  }
  // Adding a member reset the weights to the plain average: 0.25 * (a + b + c + d).
  const double average = ensemble.evaluate(data.test.x, data.test.y).at("accuracy");
  // Weights fitted by Nelder-Mead on the validation rows (never on the test rows).
  ensemble.fit_weights(val.x, val.y, "nelder_mead");
  const double weighted = ensemble.evaluate(data.test.x, data.test.y).at("accuracy");
  std::printf("weights:");
  for (double w : ensemble.weights()) std::printf(" %.3f", w);
  std::printf("\ntest accuracy: best member %.4f, average %.4f, nelder_mead %.4f: %s\n",
              best_member, average, weighted,
              weighted >= best_member ? "the ensemble is as good as its best member or better"
                                      : "it is not");
  ensemble.save("fmnist_ensemble");  // ensemble.json + members/<name>/
  return weighted >= best_member ? 0 : 1;
}
