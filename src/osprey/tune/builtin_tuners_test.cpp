// The flat options structs of the built-in tuners forward every field they share with
// OracleOptions and TunerOptions (tuner_id was once dropped): each shared field set to a value
// other than its default comes out the same. A new field in OracleOptions or TunerOptions fails
// the static_asserts in tuners.h until it is forwarded and added here.
#include "osprey/tune/builtin_tuners.h"

#include <gtest/gtest.h>

namespace osprey::tune {
namespace {

HyperParameters a_space() {
  HyperParameters hp;
  hp.Int("units", 8, 64, {.step = 8});
  return hp;
}

template <class Flat>
void expect_every_shared_field_forwarded() {
  Flat o;
  o.objective = Objective("val_accuracy", "max");
  o.max_trials = 17;
  o.seed = 1234;
  o.hyperparameters = a_space();
  o.pruner = {.kind = PrunerKind::median, .min_trials = 2, .warmup_epochs = 3};
  o.executions_per_trial = 3;
  o.max_consecutive_failed_trials = 5;
  o.directory = "/tmp/kt";
  o.project_name = "forwarded";
  o.overwrite = true;
  o.verbose = 2;
  o.tuner_id = "tuner7";
  o.max_seconds = 42.5;
  const OracleOptions oracle{
      .objective = Objective("val_accuracy", "max"),
      .max_trials = 17,
      .seed = 1234,
      .hyperparameters = a_space(),
      .pruner = {.kind = PrunerKind::median, .min_trials = 2, .warmup_epochs = 3}};
  const TunerOptions tuner{.executions_per_trial = 3,
                           .max_consecutive_failed_trials = 5,
                           .directory = "/tmp/kt",
                           .project_name = "forwarded",
                           .overwrite = true,
                           .verbose = 2,
                           .tuner_id = "tuner7",
                           .max_seconds = 42.5};
  // The expected values differ from every default, so a field left behind shows.
  EXPECT_FALSE(oracle == OracleOptions{});
  EXPECT_FALSE(tuner == TunerOptions{});
  EXPECT_TRUE(detail::oracle_options(o) == oracle);
  EXPECT_TRUE(detail::tuner_options(o) == tuner);
}

TEST(TunerOptionsTest, FlatOptionsForwardEverySharedField) {
  expect_every_shared_field_forwarded<RandomSearchOptions>();
  expect_every_shared_field_forwarded<BayesianOptimizationOptions>();
  expect_every_shared_field_forwarded<HyperbandOptions>();
  expect_every_shared_field_forwarded<AshaOptions>();
}

}  // namespace
}  // namespace osprey::tune
