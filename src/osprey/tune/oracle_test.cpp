// Oracles without models: objectives and directions, the trial life cycle, state round trips
// and reload (an interrupted trial is handed out again), duplicate avoidance, failed trials, and
// Bayesian optimization finding the optimum of a cheap function faster than random search.
#include "osprey/tune/oracle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "osprey/core/error.h"
#include "osprey/tune/bayesian_optimization.h"
#include "osprey/tune/hyperband.h"
#include "osprey/tune/random_search.h"

namespace osprey::tune {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("osprey_oracle_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

HyperParameters space_xy() {
  HyperParameters hp;
  hp.Float("x", -5.0, 10.0);
  hp.Float("y", 0.0, 15.0);
  return hp;
}

TEST(ObjectiveTest, DirectionIsInferredForKnownMetrics) {
  EXPECT_EQ(Objective("val_loss").direction(), "min");
  EXPECT_EQ(Objective("loss").direction(), "min");
  EXPECT_EQ(Objective("val_accuracy").direction(), "max");
  EXPECT_EQ(Objective("val_auc").direction(), "max");
  EXPECT_EQ(Objective("val_mae").direction(), "min");
  EXPECT_EQ(Objective("val_custom", "max").direction(), "max");
  EXPECT_THROW(Objective("val_custom"), ValueError);
  EXPECT_THROW(Objective("val_custom", "up"), ValueError);
  EXPECT_TRUE(Objective("val_accuracy").better(0.9, 0.8));
  EXPECT_TRUE(Objective("val_loss").better(0.1, 0.2));
}

TEST(OracleTest, TrialLifeCycleScoresTheBestEpochAveragedOverExecutions) {
  RandomSearchOracle oracle(
      {.objective = "val_accuracy", .max_trials = 3, .seed = 1, .hyperparameters = space_xy()});
  Trial t = oracle.create_trial("t0");
  ASSERT_EQ(t.status, TrialStatus::running);
  EXPECT_EQ(t.trial_id, "0000");
  EXPECT_TRUE(t.hyperparameters.has_value("x"));
  oracle.update_trial(t.trial_id, {{"val_accuracy", 0.5}}, 0, 0);
  oracle.update_trial(t.trial_id, {{"val_accuracy", 0.7}}, 1, 0);
  oracle.update_trial(t.trial_id, {{"val_accuracy", 0.6}}, 2, 0);
  oracle.update_trial(t.trial_id, {{"val_accuracy", 0.9}}, 0, 1);
  oracle.update_trial(t.trial_id, {{"val_accuracy", 0.8}}, 1, 1);
  const Trial done = oracle.end_trial(t.trial_id, TrialStatus::completed);
  EXPECT_EQ(done.status, TrialStatus::completed);
  EXPECT_NEAR(*done.score, (0.7 + 0.9) / 2, 1e-12);
  EXPECT_EQ(done.best_step, 1);  // the mean of the best epochs 1 and 0, rounded half away from zero
  EXPECT_NEAR(done.metrics.at("val_accuracy"), 0.8, 1e-12);
}

TEST(OracleTest, MissingOrNanObjectiveFailsTheTrialWithAReason) {
  RandomSearchOracle oracle(
      {.objective = "val_loss", .max_trials = 5, .seed = 2, .hyperparameters = space_xy()});
  Trial a = oracle.create_trial("t0");
  oracle.update_trial(a.trial_id, {{"loss", 0.3}}, 0);
  const Trial fa = oracle.end_trial(a.trial_id, TrialStatus::completed);
  EXPECT_EQ(fa.status, TrialStatus::failed);
  EXPECT_NE(fa.message.find("'val_loss' is not in the epoch logs (they hold: loss)"),
            std::string::npos)
      << fa.message;
  Trial b = oracle.create_trial("t0");
  oracle.update_trial(b.trial_id, {{"val_loss", NAN}}, 0);
  const Trial fb = oracle.end_trial(b.trial_id, TrialStatus::completed);
  EXPECT_EQ(fb.status, TrialStatus::failed);
  EXPECT_NE(fb.message.find("never finite"), std::string::npos) << fb.message;
  EXPECT_EQ(oracle.consecutive_failures(), 2);
  EXPECT_TRUE(oracle.get_best_trials(5).empty());
}

TEST(OracleTest, StopsAtMaxTrialsAndWhenTheSpaceIsExhausted) {
  HyperParameters hp;
  hp.Choice("opt", {"adam", "sgd"});
  RandomSearchOracle oracle(
      {.objective = "val_loss", .max_trials = 10, .seed = 3, .hyperparameters = hp});
  std::set<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    Trial t = oracle.create_trial("t0");
    ASSERT_EQ(t.status, TrialStatus::running);
    seen.insert(t.hyperparameters.get("opt").as_string());
    oracle.update_trial(t.trial_id, {{"val_loss", 1.0 + i}}, 0);
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  }
  EXPECT_EQ(seen.size(), 2u);  // no duplicate
  EXPECT_EQ(oracle.create_trial("t0").status, TrialStatus::stopped);
  RandomSearchOracle capped(
      {.objective = "val_loss", .max_trials = 1, .seed = 3, .hyperparameters = space_xy()});
  capped.end_trial(capped.create_trial("t0").trial_id, TrialStatus::failed, "boom");
  EXPECT_EQ(capped.create_trial("t0").status, TrialStatus::stopped);
}

TEST(OracleTest, SeededOraclesProposeTheSameValues) {
  RandomSearchOracle a({.max_trials = 5, .seed = 42, .hyperparameters = space_xy()});
  RandomSearchOracle b({.max_trials = 5, .seed = 42, .hyperparameters = space_xy()});
  RandomSearchOracle c({.max_trials = 5, .seed = 43, .hyperparameters = space_xy()});
  const Trial ta = a.create_trial("t"), tb = b.create_trial("t"), tc = c.create_trial("t");
  EXPECT_EQ(ta.hyperparameters.values(), tb.hyperparameters.values());
  EXPECT_NE(ta.hyperparameters.values(), tc.hyperparameters.values());
}

TEST(OracleTest, AReportedEpochReplacesItsRecordAndTheLaterOnes) {
  RandomSearchOracle oracle({.max_trials = 1, .seed = 3, .hyperparameters = space_xy()});
  const Trial t = oracle.create_trial("t0");
  for (int e = 0; e < 3; ++e) oracle.update_trial(t.trial_id, {{"val_loss", 1.0 + e}}, e);
  // A resumed run whose backup was taken after epoch 0 trains epochs 1 and 2 again.
  oracle.update_trial(t.trial_id, {{"val_loss", 0.5}}, 1);
  const auto& records = oracle.get_trial(t.trial_id).executions[0];
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].epoch, 0);
  EXPECT_EQ(records[1].epoch, 1);
  EXPECT_EQ(records[1].metrics[0].second, 0.5);
}

TEST(OracleTest, RequeuedTrialComesFirstWithItsRecords) {
  RandomSearchOracle oracle({.max_trials = 3, .seed = 3, .hyperparameters = space_xy()});
  const Trial a = oracle.create_trial("t0");
  const Trial b = oracle.create_trial("t1");
  oracle.update_trial(b.trial_id, {{"val_loss", 2.0}}, 0);
  oracle.requeue_trial(b.trial_id);
  oracle.requeue_trial(b.trial_id);  // twice is once
  const Trial again = oracle.create_trial("t2");
  EXPECT_EQ(again.trial_id, b.trial_id);
  ASSERT_EQ(again.executions.size(), 1u);
  EXPECT_EQ(again.executions[0][0].metrics[0].second, 2.0);
  EXPECT_EQ(oracle.create_trial("t2").trial_id, "0002");  // then new ones
  oracle.requeue_trial(a.trial_id);
  EXPECT_EQ(oracle.take_requeued(), std::vector<std::string>{a.trial_id});
  EXPECT_EQ(oracle.create_trial("t0").status, TrialStatus::stopped);  // the line is empty
  oracle.end_trial(a.trial_id, TrialStatus::completed);
  try {
    oracle.requeue_trial(a.trial_id);
    FAIL() << "requeued an ended trial";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "RandomSearch: requeue_trial: trial '0000' is failed, not running");
  }
}

// The median rule on a hand-made history: three trials report 4, 3, 2 at epoch 0 and 3, 2, 1 at
// epoch 1. A fourth trial's best so far is compared with the median of the others' best so far
// at the same epoch: 3 at epoch 0, 2 at epoch 1.
TEST(OracleTest, MedianPrunerStopsATrialWorseThanTheMedianAtItsEpoch) {
  RandomSearchOracle oracle(
      {.max_trials = 6,
       .seed = 5,
       .hyperparameters = space_xy(),
       .pruner = {.kind = PrunerKind::median, .min_trials = 3, .warmup_epochs = 1}});
  for (double base : {4.0, 3.0, 2.0}) {
    const Trial t = oracle.create_trial("t0");
    EXPECT_EQ(oracle.update_trial(t.trial_id, {{"val_loss", base}}, 0), TrialStatus::running);
    EXPECT_EQ(oracle.update_trial(t.trial_id, {{"val_loss", base - 1}}, 1), TrialStatus::running);
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  }
  // Epoch 0 is warm-up: never stopped there, however bad.
  const Trial bad = oracle.create_trial("t0");
  EXPECT_EQ(oracle.update_trial(bad.trial_id, {{"val_loss", 100.0}}, 0), TrialStatus::running);
  // Best so far 2.5 at epoch 1 against the median 2 (of 3, 2, 1): stopped.
  EXPECT_EQ(oracle.update_trial(bad.trial_id, {{"val_loss", 2.5}}, 1), TrialStatus::stopped);
  const Trial ended = oracle.end_trial(bad.trial_id, TrialStatus::completed);
  EXPECT_EQ(ended.status, TrialStatus::completed);
  EXPECT_EQ(ended.message,
            "pruned after epoch 2: its best val_loss so far, 2.5, is worse than the median 2 of 3 "
            "other runs at that epoch (median pruner)");
  // Equal to the median is not worse: it goes on.
  const Trial fair = oracle.create_trial("t0");
  oracle.update_trial(fair.trial_id, {{"val_loss", 3.0}}, 0);
  // Others at epoch 1 now: 3, 2, 1 and the pruned trial's 2.5 -> median 2.25; 2.0 beats it.
  EXPECT_EQ(oracle.update_trial(fair.trial_id, {{"val_loss", 2.0}}, 1), TrialStatus::running);
}

TEST(OracleTest, MedianPrunerWaitsForMinTrialsAndChecksItsOptions) {
  RandomSearchOracle oracle(
      {.max_trials = 3,
       .seed = 5,
       .hyperparameters = space_xy(),
       .pruner = {.kind = PrunerKind::median, .min_trials = 2, .warmup_epochs = 0}});
  const Trial a = oracle.create_trial("t0");
  oracle.update_trial(a.trial_id, {{"val_loss", 1.0}}, 0);
  const Trial b = oracle.create_trial("t1");
  // One other run at epoch 0: fewer than min_trials, so no verdict however bad.
  EXPECT_EQ(oracle.update_trial(b.trial_id, {{"val_loss", 50.0}}, 0), TrialStatus::running);
  const Trial c = oracle.create_trial("t2");
  EXPECT_EQ(oracle.update_trial(c.trial_id, {{"val_loss", 60.0}}, 0), TrialStatus::stopped);
  try {
    RandomSearchOracle bad({.hyperparameters = space_xy(), .pruner = {.min_trials = 0}});
    FAIL() << "accepted min_trials 0";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Oracle: pruner min_trials must be >= 1. Received: 0");
  }
  EXPECT_EQ(parse_pruner_kind("median", "--pruner"), PrunerKind::median);
  try {
    parse_pruner_kind("mean", "--pruner");
    FAIL() << "accepted an unknown pruner";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "--pruner: the pruner must be none or median. Received: 'mean'");
  }
}

TEST(OracleTest, ReloadKeepsEndedTrialsAndHandsOutTheInterruptedOneAgain) {
  const auto dir = fresh_dir("reload");
  std::string interrupted;
  HyperParameters interrupted_values;
  {
    RandomSearchOracle oracle({.max_trials = 4, .seed = 7, .hyperparameters = space_xy()});
    oracle.set_directory(dir);
    for (int i = 0; i < 2; ++i) {
      Trial t = oracle.create_trial("t0");
      oracle.update_trial(t.trial_id, {{"val_loss", 0.5 - 0.1 * i}}, 0);
      oracle.end_trial(t.trial_id, TrialStatus::completed);
    }
    Trial t = oracle.create_trial("t0");
    oracle.update_trial(t.trial_id, {{"val_loss", 9.0}}, 0);
    interrupted = t.trial_id;
    interrupted_values = t.hyperparameters;
    // The process "dies" here: the trial is never ended.
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "oracle.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / ("trial_" + interrupted) / "trial.json"));
  RandomSearchOracle again({.max_trials = 4, .seed = 999, .hyperparameters = space_xy()});
  again.set_directory(dir);
  ASSERT_TRUE(again.reload());
  EXPECT_EQ(again.trials().size(), 3u);
  const Trial retry = again.create_trial("t0");
  EXPECT_EQ(retry.trial_id, interrupted);
  EXPECT_EQ(retry.hyperparameters.values(), interrupted_values.values());
  // What it reported is kept for the resumed run; an epoch trained again replaces its record.
  ASSERT_EQ(retry.executions.size(), 1u);
  ASSERT_EQ(retry.executions[0].size(), 1u);
  EXPECT_EQ(retry.executions[0][0].metrics[0].second, 9.0);
  again.update_trial(retry.trial_id, {{"val_loss", 0.1}}, 0);
  EXPECT_EQ(again.get_trial(retry.trial_id).executions[0].size(), 1u);
  again.end_trial(retry.trial_id, TrialStatus::completed);
  EXPECT_EQ(*again.get_trial(retry.trial_id).score, 0.1);
  const Trial last = again.create_trial("t0");
  EXPECT_EQ(last.trial_id, "0003");
  again.end_trial(last.trial_id, TrialStatus::completed);
  EXPECT_EQ(again.create_trial("t0").status, TrialStatus::stopped);
  EXPECT_EQ(again.get_best_trials(1)[0].trial_id, interrupted);
  std::filesystem::remove_all(dir);
}

// Issue 27: a damaged study names the file and says how to go on; dropping the damaged trial by
// deleting its folder is one of the ways, and the search then runs another in its place.
TEST(OracleTest, ADamagedTrialFileSaysHowToGoOnAndDeletingItsFolderDropsIt) {
  const auto dir = fresh_dir("damaged");
  {
    RandomSearchOracle oracle({.max_trials = 4, .seed = 7, .hyperparameters = space_xy()});
    oracle.set_directory(dir);
    for (int i = 0; i < 3; ++i) {
      Trial t = oracle.create_trial("t0");
      oracle.update_trial(t.trial_id, {{"val_loss", 0.5 - 0.1 * i}}, 0);
      oracle.end_trial(t.trial_id, TrialStatus::completed);
    }
  }
  const auto damaged = dir / "trial_0001";
  {
    std::string text;
    {
      std::ifstream in(damaged / "trial.json");
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::ofstream(damaged / "trial.json", std::ios::trunc) << text.substr(0, text.size() / 2);
  }
  RandomSearchOracle again({.max_trials = 4, .seed = 7, .hyperparameters = space_xy()});
  again.set_directory(dir);
  try {
    again.reload();
    FAIL() << "a truncated trial.json was accepted";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find((damaged / "trial.json").string() + ":"), 0u) << msg;
    EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
    EXPECT_NE(msg.find("; the study cannot resume with trial 0001 as it is: repair the file, "
                       "delete " +
                       damaged.string() +
                       " to drop the trial (the search runs another in its place), or start the "
                       "study over with overwrite=true (osprey tune --overwrite)"),
              std::string::npos)
        << msg;
  }
  std::filesystem::remove_all(damaged);
  RandomSearchOracle dropped({.max_trials = 4, .seed = 7, .hyperparameters = space_xy()});
  dropped.set_directory(dir);
  ASSERT_TRUE(dropped.reload());
  ASSERT_EQ(dropped.trials().size(), 2u);
  EXPECT_EQ(dropped.trials()[0].trial_id, "0000");
  EXPECT_EQ(dropped.trials()[1].trial_id, "0002");
  // The next trial takes a fresh id, not the dropped one's nor a kept one's.
  const Trial next = dropped.create_trial("t0");
  EXPECT_EQ(next.trial_id, "0003");
  EXPECT_EQ(next.status, TrialStatus::running);
  std::filesystem::remove_all(dir);
}

TEST(OracleTest, ADamagedOracleFileSaysHowToGoOn) {
  const auto dir = fresh_dir("damaged_oracle");
  {
    RandomSearchOracle oracle({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()});
    oracle.set_directory(dir);
    oracle.create_trial("t0");
  }
  std::ofstream(dir / "oracle.json", std::ios::trunc) << "{\"class_name\": \"Random";
  RandomSearchOracle again({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()});
  again.set_directory(dir);
  try {
    again.reload();
    FAIL() << "a truncated oracle.json was accepted";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find((dir / "oracle.json").string() + ":1:"), 0u) << msg;
    EXPECT_NE(msg.find("; the study cannot resume from it: repair the file, or start the study "
                       "over with overwrite=true (osprey tune --overwrite)"),
              std::string::npos)
        << msg;
  }
  std::filesystem::remove_all(dir);
}

TEST(OracleTest, AStudyFileCannotNameAFolderOutsideTheStudy) {
  RandomSearchOracle oracle({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()});
  oracle.create_trial("t0");
  nlohmann::json inline_trials = oracle.get_state(/*with_trials=*/true);
  inline_trials["trials"][0]["trial_id"] = "../../escape";
  nlohmann::json listed = oracle.get_state(/*with_trials=*/false);
  listed["trial_ids"][0] = "../../escape";
  for (const nlohmann::json& state : {inline_trials, listed}) {
    RandomSearchOracle again({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()});
    try {
      again.set_state(state);
      FAIL() << "accepted a trial id with a path in it";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("trial id \"../../escape\" is not 1-64 letters, "
                                           "digits, '_' or '-' (it names the trial's folder)"),
                std::string::npos)
          << e.what();
    }
  }
}

// Found by fuzz_tuner_state: integers of the state given as floats past their range.
TEST(OracleTest, AStateWhoseIntegersAreFloatsPastTheirRangeIsRefused) {
  HyperbandOracle oracle({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()},
                         {.max_epochs = 2});
  nlohmann::json state = oracle.get_state();
  state["algorithm"]["max_epochs"] = 8.9e28;
  HyperbandOracle again({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()},
                        {.max_epochs = 2});
  try {
    again.set_state(state);
    FAIL() << "accepted max_epochs = 8.9e28";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "oracle state: algorithm: max_epochs is 8.9e+28, past the +-2.14748e+09 a "
                 "number here may take");
  }
  state = oracle.get_state();
  state["seed"] = -1.5;
  try {
    again.set_state(state);
    FAIL() << "accepted seed = -1.5";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "oracle state: seed must be a non-negative integer, got -1.5");
  }
}

TEST(OracleTest, ReloadRefusesAnotherKindOfSearch) {
  const auto dir = fresh_dir("kind");
  {
    RandomSearchOracle oracle({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()});
    oracle.set_directory(dir);
    oracle.create_trial("t0");
  }
  BayesianOptimizationOracle bo({.max_trials = 2, .seed = 1, .hyperparameters = space_xy()});
  bo.set_directory(dir);
  try {
    bo.reload();
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("holds a RandomSearch search"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(OracleTest, StateRoundTripsThroughJson) {
  RandomSearchOracle a(
      {.objective = "val_accuracy", .max_trials = 6, .seed = 5, .hyperparameters = space_xy()});
  for (int i = 0; i < 3; ++i) {
    Trial t = a.create_trial("t");
    a.update_trial(t.trial_id, {{"val_accuracy", 0.1 * i}}, 0);
    a.end_trial(t.trial_id, TrialStatus::completed);
  }
  const nlohmann::json state = nlohmann::json::parse(a.get_state().dump());
  RandomSearchOracle b({.objective = "val_accuracy", .max_trials = 6, .seed = 0});
  b.set_state(state);
  EXPECT_EQ(b.trials().size(), 3u);
  EXPECT_EQ(b.get_best_trials(1)[0].trial_id, "0002");
  // The random stream continues where it was.
  EXPECT_EQ(a.create_trial("t").hyperparameters.values(),
            b.create_trial("t").hyperparameters.values());
}

struct ExposedOracle : RandomSearchOracle {
  using Oracle::random_values;
  using RandomSearchOracle::RandomSearchOracle;
};

TEST(OracleTest, ConditionalChildrenAreSampledOnlyWhenActive) {
  HyperParameters hp;
  hp.Choice("opt", {"adam", "sgd"});
  {
    auto s = hp.conditional_scope("opt", {"sgd"});
    hp.Float("momentum", 0.0, 0.9);
  }
  ExposedOracle oracle({.max_trials = 0, .seed = 11, .hyperparameters = hp});
  int sgd = 0;
  double momentum_sum = 0;
  for (int i = 0; i < 2000; ++i) {
    const HyperParameters v = oracle.random_values();
    const bool is_sgd = v.get("opt").as_string() == "sgd";
    sgd += is_sgd;
    ASSERT_EQ(v.has_value("momentum"), is_sgd);
    if (is_sgd) momentum_sum += v.get("momentum").as_double();
  }
  EXPECT_NEAR(sgd, 1000, 90);                   // Binomial(2000, 1/2): sd 22
  EXPECT_NEAR(momentum_sum / sgd, 0.45, 0.03);  // uniform on [0, 0.9]
  // Through create_trial, duplicates are skipped: "adam" (no child) is proposed once.
  RandomSearchOracle dedupe({.max_trials = 20, .seed = 11, .hyperparameters = hp});
  int adam = 0;
  for (int i = 0; i < 20; ++i) {
    Trial t = dedupe.create_trial("t");
    adam += t.hyperparameters.get("opt").as_string() == "adam";
    dedupe.end_trial(t.trial_id, TrialStatus::failed, "not trained");
  }
  EXPECT_EQ(adam, 1);
}

double branin(double x, double y) {
  const double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
  return std::pow(y - b * x * x + c * x - 6, 2) + 10 * (1 - t) * std::cos(x) + 10;
}

template <class O>
double best_after(O& oracle, int n) {
  double best = INFINITY;
  for (int i = 0; i < n; ++i) {
    Trial t = oracle.create_trial("t");
    const double v =
        branin(t.hyperparameters.get("x").as_double(), t.hyperparameters.get("y").as_double());
    oracle.update_trial(t.trial_id, {{"val_loss", v}}, 0);
    oracle.end_trial(t.trial_id, TrialStatus::completed);
    best = std::min(best, v);
  }
  return best;
}

TEST(BayesianOptimizationTest, FindsBraninsMinimumCloserThanRandomSearch) {
  // Branin's minimum is 0.397887; median over 3 seeds keeps the test fast and not a coin flip.
  std::vector<double> bo_regret, rs_regret;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    BayesianOptimizationOracle bo({.max_trials = 25, .seed = seed, .hyperparameters = space_xy()},
                                  {.num_candidates = 300});
    RandomSearchOracle rs({.max_trials = 25, .seed = seed, .hyperparameters = space_xy()});
    bo_regret.push_back(best_after(bo, 25) - 0.397887);
    rs_regret.push_back(best_after(rs, 25) - 0.397887);
  }
  std::sort(bo_regret.begin(), bo_regret.end());
  std::sort(rs_regret.begin(), rs_regret.end());
  EXPECT_LT(bo_regret[1], rs_regret[1]);
  EXPECT_LT(bo_regret[1], 0.5);
}

TEST(BayesianOptimizationTest, RejectsBadOptions) {
  EXPECT_THROW(BayesianOptimizationOracle({}, {.beta = -1}), ValueError);
  EXPECT_THROW(BayesianOptimizationOracle({}, {.alpha = 0}), ValueError);
}

TEST(BayesianOptimizationTest, ExpectedImprovementAlsoConverges) {
  BayesianOptimizationOracle bo({.max_trials = 25, .seed = 4, .hyperparameters = space_xy()},
                                {.acquisition = Acquisition::ei, .num_candidates = 300});
  EXPECT_LT(best_after(bo, 25) - 0.397887, 1.5);
}

// A trial.json whose epoch or best_step is not an int (a fuzzer's 7.8e71; nlohmann would cast it,
// undefined behaviour) is an IoError naming the field.
TEST(TrialTest, IntegerFieldsMustBeIntegersWithinRange) {
  const nlohmann::json good = {
      {"trial_id", "0001"},
      {"status", "completed"},
      {"hyperparameters",
       {{"space", nlohmann::json::array()}, {"values", nlohmann::json::object()}}},
      {"score", 0.5},
      {"best_step", 1},
      {"metrics", nlohmann::json::object()},
      {"executions", {{{{"epoch", 0}, {"metrics", {{"loss", 0.5}}}}}}}};
  EXPECT_EQ(Trial::from_json(good, "trial.json").executions.at(0).at(0).epoch, 0);
  nlohmann::json bad = good;
  bad["executions"][0][0]["epoch"] = 7.77778e71;
  try {
    Trial::from_json(bad, "trial.json");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(),
                 "trial.json: epoch must be an integer within int's range. Received: 7.77778e+71");
  }
  bad = good;
  bad["best_step"] = 4294967296LL;
  try {
    Trial::from_json(bad, "trial.json");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(),
                 "trial.json: best_step must be an integer within int's range. Received: "
                 "4294967296");
  }
}

}  // namespace
}  // namespace osprey::tune
