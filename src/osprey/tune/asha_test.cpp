// ASHA's rungs, its promotions driven by hand through create/update/end_trial (one worker
// against a sequence worked out by hand, several workers ending trials out of order), its state
// across a reload, its option checks, and the Asha tuner end to end on a tiny model, where a
// promoted trial resumes from the state its parent ended in.
#include "osprey/tune/asha.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/trainer.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/tuner_test_data.h"

namespace osprey::tune {
namespace {

HyperParameters x_space() {
  HyperParameters hp;
  hp.Float("x", 0.0, 1.0);
  return hp;
}

// Reports every epoch the trial trains (kTunerInitialEpoch to kTunerEpochs) with a val_loss of
// loss + 0.1 / (epoch + 1), so the order of the losses is the order at every rung.
void train(Oracle& oracle, const Trial& t, double loss) {
  const auto& v = t.hyperparameters;
  for (int64_t e = v.get(kTunerInitialEpoch).as_int(); e < v.get(kTunerEpochs).as_int(); ++e)
    oracle.update_trial(t.trial_id, {{"val_loss", loss + 0.1 / static_cast<double>(e + 1)}},
                        static_cast<int>(e));
}

// "new@0" for a new configuration, "<parent>@<rung>" for a promotion.
std::string decision(const Trial& t) {
  const auto& v = t.hyperparameters;
  const std::string from = v.has_value(kTunerTrialId) ? v.get(kTunerTrialId).as_string() : "new";
  return from + "@" + std::to_string(v.get(kTunerRound).as_int());
}

TEST(AshaRungsTest, EndAtMaxEpochsExactly) {
  EXPECT_EQ(asha_rungs({.max_epochs = 27, .min_epochs = 1, .factor = 3}),
            (std::vector<int>{1, 3, 9, 27}));
  EXPECT_EQ(asha_rungs({.max_epochs = 10, .min_epochs = 1, .factor = 3}),
            (std::vector<int>{1, 3, 9, 10}));
  EXPECT_EQ(asha_rungs({.max_epochs = 20, .min_epochs = 2, .factor = 2}),
            (std::vector<int>{2, 4, 8, 16, 20}));
  EXPECT_EQ(asha_rungs({.max_epochs = 5, .min_epochs = 5, .factor = 3}), (std::vector<int>{5}));
  AshaOracle oracle({.max_trials = 1, .seed = 1, .hyperparameters = x_space()},
                    {.max_epochs = 27, .min_epochs = 1, .factor = 3});
  EXPECT_EQ(oracle.rungs(), (std::vector<int>{1, 3, 9, 27}));
}

// One worker, rungs 1, 3, 9 epochs (factor 3). The k-th new configuration has the k-th loss of
// kLosses; a promoted trial keeps its configuration's loss. n_k counts the trials completed at
// rung k; the top floor(n_k / 3) of a rung are promotable, the highest rung first.
//   0000 new (c0 .5)   n0=1: none promotable
//   0001 new (c1 .8)   n0=2: none
//   0002 new (c2 .3)   n0=3: top 1 = c2 (0002)
//   0003 0002@1        n0=3, n1=1: top 1 of rung 0 is promoted already
//   0004 new (c3 .9)   n0=4: top 1 = 0002, promoted
//   0005 new (c4 .7)   n0=5: top 1 = 0002, promoted
//   0006 new (c5 .2)   n0=6: top 2 = 0006, 0002: 0006 is not promoted yet
//   0007 0006@1        n1=2: none at rung 1; rung 0's top 2 are both promoted
//   0008 new (c6 .6)   n0=7: top 2 = 0006, 0002
//   0009 new (c7 .4)   n0=8: top 2 = 0006, 0002
//   0010 new (c8 .95)  n0=9: top 3 = 0006, 0002, 0009: 0009 is not promoted yet
//   0011 0009@1        n1=3: top 1 of rung 1 = 0007 (c5 .2)
//   0012 0007@2        rung 2 is the last: nothing above it; rung 1's top 1 and rung 0's
//   0013 new (c9 .1)   top 3 are promoted
TEST(AshaOracleTest, OneWorkerPromotesInTheHandComputedOrder) {
  const std::vector<double> losses = {0.5, 0.8, 0.3, 0.9, 0.7, 0.2, 0.6, 0.4, 0.95, 0.1};
  const std::vector<std::string> expected = {"new@0", "new@0",  "new@0",  "0002@1", "new@0",
                                             "new@0", "new@0",  "0006@1", "new@0",  "new@0",
                                             "new@0", "0009@1", "0007@2", "new@0"};
  AshaOracle oracle({.max_trials = 14, .seed = 2, .hyperparameters = x_space()},
                    {.max_epochs = 9, .min_epochs = 1, .factor = 3});
  std::map<double, double> loss_of;  // x -> its configuration's loss
  std::vector<std::string> got;
  while (true) {
    const Trial t = oracle.create_trial("t");
    if (t.status == TrialStatus::stopped) break;
    ASSERT_EQ(t.status, TrialStatus::running);
    const auto& v = t.hyperparameters;
    const double x = v.get("x").as_double();
    const int64_t round = v.get(kTunerRound).as_int();
    EXPECT_EQ(v.get(kTunerBracket).as_int(), 0);
    EXPECT_EQ(v.get(kTunerEpochs).as_int(), oracle.rungs()[round]);
    EXPECT_EQ(v.get(kTunerInitialEpoch).as_int(), round == 0 ? 0 : oracle.rungs()[round - 1]);
    if (!v.has_value(kTunerTrialId)) {
      ASSERT_LT(loss_of.size(), losses.size());
      ASSERT_EQ(loss_of.count(x), 0u);
      loss_of[x] = losses[loss_of.size()];
    } else {
      EXPECT_EQ(
          oracle.get_trial(v.get(kTunerTrialId).as_string()).hyperparameters.get("x").as_double(),
          x);
    }
    got.push_back(decision(t));
    train(oracle, t, loss_of.at(x));
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  }
  EXPECT_EQ(got, expected);
}

TEST(AshaOracleTest, TrialsEndingOutOfOrderArePromotedOnceAndOnlyOnceCompleted) {
  AshaOracle oracle({.max_trials = 100, .seed = 4, .hyperparameters = x_space()},
                    {.max_epochs = 9, .min_epochs = 1, .factor = 3});
  auto loss = [](const Trial& t) { return t.hyperparameters.get("x").as_double(); };
  // Four workers start before anything completed: four new configurations, no idle.
  std::vector<Trial> a;
  for (int i = 0; i < 4; ++i) {
    a.push_back(oracle.create_trial("w"));
    ASSERT_EQ(a.back().status, TrialStatus::running);
    EXPECT_EQ(decision(a.back()), "new@0");
  }
  // Two of them end (the last first): a rung of 2 promotes nothing.
  for (const int i : {3, 1}) {
    train(oracle, a[i], loss(a[i]));
    oracle.end_trial(a[i].trial_id, TrialStatus::completed);
  }
  const Trial e = oracle.create_trial("w3");
  EXPECT_EQ(decision(e), "new@0");
  // A third ends: the best of the three completed goes on, though 0000 and 0004 still run.
  train(oracle, a[2], loss(a[2]));
  oracle.end_trial(a[2].trial_id, TrialStatus::completed);
  std::vector<const Trial*> three = {&a[1], &a[2], &a[3]};
  const Trial* best = *std::min_element(three.begin(), three.end(),
                                        [&](auto* p, auto* q) { return loss(*p) < loss(*q); });
  const Trial f = oracle.create_trial("w1");
  EXPECT_EQ(decision(f), best->trial_id + "@1");
  // It is not promoted twice: the next worker gets a new configuration.
  EXPECT_EQ(decision(oracle.create_trial("w2")), "new@0");
}

// Four workers; the trial that ends next is drawn at random, one in ten fails. Every decision is
// checked against the rungs as they stand when it is made: a promotion takes the best trial not
// promoted yet among the top 1/factor of the completed trials of the highest rung that has one,
// and a new configuration comes only when no rung has one.
TEST(AshaOracleTest, ManyWorkersNeverIdleAndPromoteOnlyCompletedTrialsOnce) {
  const int factor = 3;
  AshaOracle oracle({.max_trials = 120, .seed = 9, .hyperparameters = x_space()},
                    {.max_epochs = 27, .min_epochs = 1, .factor = factor});
  const Objective& obj = oracle.objective();
  std::mt19937 gen(17);
  std::set<std::string> promoted;
  std::vector<Trial> running;
  int ended = 0, promotions = 0;
  // The trial the next get_job should promote: "" when none.
  auto expected_parent = [&]() -> std::string {
    for (int k = static_cast<int>(oracle.rungs().size()) - 2; k >= 0; --k) {
      std::vector<const Trial*> rung;
      for (const Trial& t : oracle.trials()) {
        if (t.status == TrialStatus::completed && t.score &&
            t.hyperparameters.get(kTunerRound).as_int() == k)
          rung.push_back(&t);
      }
      std::stable_sort(rung.begin(), rung.end(), [&](const Trial* p, const Trial* q) {
        return obj.better(*p->score, *q->score);
      });
      for (size_t i = 0; i < rung.size() / factor; ++i) {
        if (promoted.count(rung[i]->trial_id) == 0) return rung[i]->trial_id;
      }
    }
    return "";
  };
  while (true) {
    while (running.size() < 4) {
      const std::string want = expected_parent();
      Trial t = oracle.create_trial("w");
      if (t.status == TrialStatus::stopped) break;
      ASSERT_EQ(t.status, TrialStatus::running) << "ASHA never waits";
      const auto& v = t.hyperparameters;
      const std::string parent = v.has_value(kTunerTrialId) ? v.get(kTunerTrialId).as_string() : "";
      ASSERT_EQ(parent, want) << "trial " << t.trial_id;
      if (!parent.empty()) {
        EXPECT_TRUE(promoted.insert(parent).second) << parent << " promoted twice";
        const Trial& p = oracle.get_trial(parent);
        EXPECT_EQ(p.status, TrialStatus::completed);
        EXPECT_EQ(p.hyperparameters.get("x").as_double(), v.get("x").as_double());
        EXPECT_EQ(p.hyperparameters.get(kTunerEpochs).as_int(), v.get(kTunerInitialEpoch).as_int());
        EXPECT_EQ(p.hyperparameters.get(kTunerRound).as_int() + 1, v.get(kTunerRound).as_int());
        ++promotions;
      }
      running.push_back(std::move(t));
    }
    if (running.empty()) break;
    const size_t i = std::uniform_int_distribution<size_t>(0, running.size() - 1)(gen);
    const Trial t = running[i];
    running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    train(oracle, t, t.hyperparameters.get("x").as_double());
    oracle.end_trial(t.trial_id, ++ended % 10 == 0 ? TrialStatus::failed : TrialStatus::completed);
  }
  EXPECT_EQ(oracle.trials().size(), 120u);
  EXPECT_GT(promotions, 30);
  int top = 0;
  for (const Trial& t : oracle.trials()) top += t.hyperparameters.get(kTunerRound).as_int() == 3;
  EXPECT_GT(top, 0) << "some configuration reached max_epochs";
}

// Runs `n` trials, one at a time, each scoring its x.
void run_serially(AshaOracle& oracle, int n) {
  for (int i = 0; i < n; ++i) {
    const Trial t = oracle.create_trial("t");
    ASSERT_EQ(t.status, TrialStatus::running);
    train(oracle, t, t.hyperparameters.get("x").as_double());
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  }
}

TEST(AshaOracleTest, AReloadedStudyMakesTheSameNextDecisions) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("osprey_asha_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const OracleOptions options{.max_trials = 40, .seed = 5, .hyperparameters = x_space()};
  const AshaOracleOptions asha{.max_epochs = 9, .min_epochs = 1, .factor = 3};
  AshaOracle whole(options, asha);
  run_serially(whole, 18);
  {
    AshaOracle a(options, asha);
    a.set_directory(dir);
    run_serially(a, 12);
  }
  AshaOracle b(options, asha);
  b.set_directory(dir);
  ASSERT_TRUE(b.reload());
  run_serially(b, 6);
  ASSERT_EQ(b.trials().size(), 18u);
  int promotions = 0;
  for (size_t i = 12; i < 18; ++i) {
    const auto& want = whole.trials()[i].hyperparameters;
    const auto& got = b.trials()[i].hyperparameters;
    EXPECT_EQ(decision(b.trials()[i]), decision(whole.trials()[i])) << i;
    EXPECT_EQ(got.get("x").as_double(), want.get("x").as_double()) << i;
    promotions += got.has_value(kTunerTrialId);
  }
  // Six trials in a row cross a multiple of 3 completed at rung 0, so one of them promotes.
  EXPECT_GT(promotions, 0) << "the reloaded part should promote, to test the promoted set";
  AshaOracle other(options, {.max_epochs = 9, .min_epochs = 1, .factor = 2});
  other.set_directory(dir);
  try {
    other.reload();
    ADD_FAILURE() << "a study with another factor resumed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "ASHA: the saved search used max_epochs=9 min_epochs=1 factor=3, this one "
                  "max_epochs=9 min_epochs=1 factor=2; use another project_name or overwrite=true"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(AshaOracleTest, BadOptionsNameTheFieldAndValue) {
  auto message = [](int max_trials, AshaOracleOptions asha) {
    try {
      AshaOracle o({.max_trials = max_trials, .seed = 1, .hyperparameters = x_space()}, asha);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(10, {.max_epochs = 0}),
            "ASHA: max_epochs must be >= 1. Received: max_epochs=0");
  EXPECT_EQ(message(10, {.max_epochs = 9, .min_epochs = 0}),
            "ASHA: min_epochs must be in [1, max_epochs=9]. Received: min_epochs=0");
  EXPECT_EQ(message(10, {.max_epochs = 9, .min_epochs = 10}),
            "ASHA: min_epochs must be in [1, max_epochs=9]. Received: min_epochs=10");
  EXPECT_EQ(message(10, {.max_epochs = 9, .factor = 1}),
            "ASHA: factor must be >= 2. Received: factor=1");
  EXPECT_EQ(message(0, {.max_epochs = 9}),
            "ASHA: max_trials must be positive (ASHA runs until it has created max_trials "
            "trials). Received: max_trials=0");
  EXPECT_EQ(message(10, {.max_epochs = 9}), "no error");
}

using test_data::Data;
using test_data::make_data;

// Checks each promoted trial (test_data::PromotionChecker) on this test's model.
struct ResumeCheckingModel : test_data::PromotionChecker {
  Model build(HyperParameters& hp) override {
    const int64_t units = hp.Int("units", 2, 16, {.step = 2});
    const double lr = hp.Float("learning_rate", 1e-3, 1e-1, {.sampling = "log"});
    Model model = Sequential({layers::Dense(units, "relu"), layers::Dense(2, "softmax")},
                             {.input_shape = {4}});
    std::shared_ptr<optim::Optimizer> o = optim::get("adam");
    o->set_learning_rate(lr);
    model.compile(o, "sparse_categorical_crossentropy", {"accuracy"});
    return model;
  }
};

// The objective is the largest validation loss, which a learning model reaches early, so a
// rung-1 trial's best epoch is usually not its last: resuming from its best checkpoint instead
// of its end state would fail the checks above.
TEST(AshaTunerTest, APromotedTrialTrainsOnlyItsExtraEpochsFromItsParentsEndState) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("osprey_asha_tuner_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto hm = std::make_shared<ResumeCheckingModel>();
  hm->data = make_data();
  // One worker, rungs 1, 3, 9: each third rung-0 trial completed makes one more promotable, so
  // 14 trials reach rung 2 whatever the scores.
  Asha tuner(hm, {.objective = Objective("val_loss", "max"),
                  .max_epochs = 9,
                  .min_epochs = 1,
                  .factor = 3,
                  .max_trials = 14,
                  .directory = dir.string(),
                  .project_name = "p",
                  .seed = 3,
                  .verbose = 0});
  hm->tuner = &tuner;
  EXPECT_STREQ(tuner.oracle().class_name(), "ASHA");
  tuner.search(hm->data.x, hm->data.y,
               {.batch_size = 32,
                .epochs = 100,
                .verbose = 0,
                .validation_data = train::ValidationData(hm->data.xv, hm->data.yv),
                .seed = 1});
  ASSERT_EQ(tuner.oracle().trials().size(), 14u);
  int per_rung[3] = {0, 0, 0};
  for (const Trial& t : tuner.oracle().trials()) {
    const auto& v = t.hyperparameters;
    const int64_t initial = v.get(kTunerInitialEpoch).as_int(),
                  epochs = v.get(kTunerEpochs).as_int();
    ++per_rung[v.get(kTunerRound).as_int()];
    ASSERT_EQ(t.status, TrialStatus::completed) << t.trial_id << ": " << t.message;
    // Only the extra epochs, numbered from where the parent stopped.
    ASSERT_EQ(t.executions.at(0).size(), static_cast<size_t>(epochs - initial)) << t.trial_id;
    EXPECT_EQ(t.executions[0].front().epoch, initial) << t.trial_id;
    // A trial at max_epochs is never promoted, so its end state is not kept apart.
    if (epochs == 9) {
      EXPECT_FALSE(std::filesystem::exists(tuner.end_state_path(t.trial_id))) << t.trial_id;
    }
  }
  EXPECT_GE(per_rung[1], 3);
  EXPECT_GE(per_rung[2], 1);
  EXPECT_EQ(hm->promoted, per_rung[1] + per_rung[2]);
  EXPECT_GE(hm->from_a_later_epoch_than_the_best, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace osprey::tune
