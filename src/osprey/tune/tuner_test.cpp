// Tuners end to end on a tiny synthetic problem (4 features, 2 classes, 240 samples): trial
// files and best weights, resume after the process is killed mid-trial, failed trials, errors
// that stop the search, executions averaged, callbacks copied per trial, Hyperband resuming
// promoted trials from their parent's state, summaries, and the best-epoch retraining helper.
#include "osprey/tune/tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/io/json.h"
#include "osprey/io/safetensors.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"
#include "osprey/train/callbacks/early_stopping.h"
#include "osprey/train/trainer.h"
#include "osprey/tune/best_epoch.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/tuner_test_data.h"

namespace osprey::tune {
namespace {

using test_data::Data;
using test_data::make_data;

Model build_model(HyperParameters& hp) {
  const int64_t units = hp.Int("units", 2, 16, {.step = 2});
  const double lr = hp.Float("learning_rate", 1e-3, 1e-1, {.sampling = "log"});
  const std::string opt = hp.Choice("optimizer", {"adam", "sgd"});
  Model model =
      Sequential({layers::Dense(units, "relu"), layers::Dense(2, "softmax")}, {.input_shape = {4}});
  std::shared_ptr<optim::Optimizer> o = optim::get(opt);
  o->set_learning_rate(lr);
  model.compile(o, "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("osprey_tuner_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

train::FitOptions fit_options(const Data& d, int epochs) {
  return {.batch_size = 32,
          .epochs = epochs,
          .verbose = 0,
          .validation_data = train::ValidationData(d.xv, d.yv),
          .seed = 1};
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TunerTest, SearchWritesTrialFilesAndBestWeights) {
  const Data d = make_data();
  const auto dir = fresh_dir("files");
  RandomSearch tuner(build_model, {.objective = "val_accuracy",
                                   .max_trials = 3,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 1,
                                   .verbose = 0});
  tuner.search(d.x, d.y, fit_options(d, 2));
  ASSERT_EQ(tuner.oracle().trials().size(), 3u);
  for (const Trial& t : tuner.oracle().trials()) {
    EXPECT_EQ(t.status, TrialStatus::completed) << t.message;
    const auto tdir = dir / "p" / ("trial_" + t.trial_id);
    const auto j = io::read_json_file(tdir / "trial.json");
    EXPECT_EQ(j.at("status"), "completed");
    ASSERT_EQ(j.at("executions").size(), 1u);
    EXPECT_EQ(j.at("executions")[0].size(), 2u);  // one record per epoch
    EXPECT_TRUE(j.at("executions")[0][1].at("metrics").contains("val_accuracy"));
    EXPECT_TRUE(j.at("hyperparameters").at("values").contains("units"));
    // An ordinary saved model: every weight under its path, and the optimizer state.
    EXPECT_TRUE(std::filesystem::exists(tdir / "checkpoint" / "config.json"));
    const auto weights = io::load_safetensors(tdir / "checkpoint" / "model.safetensors");
    EXPECT_TRUE(weights.contains("sequential/dense/kernel"));
    EXPECT_TRUE(std::filesystem::exists(tdir / "checkpoint" / "optimizer.safetensors"));
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "p" / "oracle.json"));
  const auto best = tuner.get_best_hyperparameters(3);
  ASSERT_EQ(best.size(), 3u);
  const auto trials = tuner.oracle().get_best_trials(3);
  EXPECT_GE(*trials[0].score, *trials[1].score);
  EXPECT_GE(*trials[1].score, *trials[2].score);
  // The best model carries the weights of its best epoch: evaluating it gives that epoch's score.
  auto models = tuner.get_best_models(1);
  ASSERT_EQ(models.size(), 1u);
  const auto logs = models[0].evaluate(d.xv, d.yv, {.batch_size = 80});
  EXPECT_NEAR(logs.at("accuracy"), *trials[0].score, 1e-6);
  std::filesystem::remove_all(dir);
}

// Counts epochs across trials and kills the process (no destructors, no flush) mid-search.
struct KillAfterEpochs : train::Callback {
  explicit KillAfterEpochs(int n) : left(n) {}
  void on_epoch_end(int, const train::Logs&) override {
    if (--left == 0) std::_Exit(3);
  }
  int left;
};

TEST(TunerDeathTest, ResumeAfterAKillRepeatsNoFinishedTrial) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Data d = make_data();
  // No pid in the name: the death test's child is another process and must find the same folder.
  const auto dir = std::filesystem::temp_directory_path() / "osprey_tuner_test_resume";
  std::filesystem::remove_all(dir);
  const RandomSearchOptions options{.objective = "val_loss",
                                    .max_trials = 4,
                                    .directory = dir.string(),
                                    .project_name = "p",
                                    .seed = 9,
                                    .verbose = 0};
  EXPECT_EXIT(
      {
        RandomSearch tuner(build_model, options);
        auto fo = fit_options(d, 2);
        fo.callbacks.push_back(
            std::make_shared<KillAfterEpochs>(5));  // trials 0 and 1, then epoch 0 of trial 2
        tuner.search(d.x, d.y, fo);
      },
      ::testing::ExitedWithCode(3), "");
  const auto p = dir / "p";
  const auto before0 = read(p / "trial_0000" / "trial.json"),
             before1 = read(p / "trial_0001" / "trial.json");
  const auto t2 = io::read_json_file(p / "trial_0002" / "trial.json");
  ASSERT_EQ(t2.at("status"), "running");  // cut short
  // Predictions are written when a trial ends: the finished trials have them, the cut one not.
  EXPECT_TRUE(std::filesystem::exists(p / "trial_0001" / "val_predictions.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(p / "trial_0002" / "val_predictions.safetensors"));
  const auto interrupted = t2.at("hyperparameters").at("values");

  std::vector<nlohmann::json> built;
  RandomSearch resumed(
      [&](HyperParameters& hp) {
        built.push_back(hp.to_json().at("values"));
        return build_model(hp);
      },
      options);
  resumed.search(d.x, d.y, fit_options(d, 2));
  ASSERT_EQ(resumed.oracle().trials().size(), 4u);
  for (const Trial& t : resumed.oracle().trials())
    EXPECT_EQ(t.status, TrialStatus::completed) << t.trial_id;
  // Finished trials were not re-run: their files are untouched and their values never rebuilt.
  EXPECT_EQ(read(p / "trial_0000" / "trial.json"), before0);
  EXPECT_EQ(read(p / "trial_0001" / "trial.json"), before1);
  const auto v0 = resumed.oracle().get_trial("0000").hyperparameters.to_json().at("values");
  const auto v1 = resumed.oracle().get_trial("0001").hyperparameters.to_json().at("values");
  // The interrupted trial ran again with the same values, then one new trial; the space was
  // already known, so no extra defaults build.
  ASSERT_EQ(built.size(), 2u);
  EXPECT_EQ(built[0], interrupted);
  EXPECT_NE(built[1], v0);
  EXPECT_NE(built[1], v1);
  EXPECT_NE(built[1], interrupted);
  EXPECT_EQ(resumed.oracle().get_trial("0002").executions.at(0).size(), 2u);
  std::filesystem::remove_all(dir);
}

struct KillAtEpochBegin : train::Callback {
  explicit KillAtEpochBegin(int n) : left(n) {}
  void on_epoch_begin(int, const train::Logs&) override {
    if (--left == 0) std::_Exit(3);
  }
  int left;
};

// A trial killed between epochs resumes from its backup at the next epoch, keeps the epochs it
// reported, and ends exactly as the same search run without the kill (scores equal bit for bit:
// the backup holds weights, optimizer state, seeds and the data position).
TEST(TunerDeathTest, AKilledTrialResumesFromItsLastEpochAndEndsAsIfUninterrupted) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Data d = make_data();
  const auto dir = std::filesystem::temp_directory_path() / "osprey_tuner_test_epoch_resume";
  const auto reference_dir = fresh_dir("epoch_resume_reference");
  std::filesystem::remove_all(dir);
  RandomSearchOptions options{.objective = "val_loss",
                              .max_trials = 2,
                              .directory = dir.string(),
                              .project_name = "p",
                              .seed = 21,
                              .verbose = 0};
  EXPECT_EXIT(
      {
        set_global_seed(77);  // the reference below starts from the same initial weights
        RandomSearch tuner(build_model, options);
        auto fo = fit_options(d, 3);
        // Trial 0: epochs 0-2; trial 1: epoch 0, then killed as epoch 1 begins.
        fo.callbacks.push_back(std::make_shared<KillAtEpochBegin>(5));
        tuner.search(d.x, d.y, fo);
      },
      ::testing::ExitedWithCode(3), "");
  const auto p = dir / "p";
  const auto cut = io::read_json_file(p / "trial_0001" / "trial.json");
  ASSERT_EQ(cut.at("status"), "running");
  ASSERT_EQ(cut.at("executions").at(0).size(), 1u);  // epoch 0 reported
  ASSERT_TRUE(std::filesystem::exists(p / "trial_0001" / "backup" / "execution_0"));

  RandomSearch resumed(build_model, options);
  resumed.search(d.x, d.y, fit_options(d, 3));
  const Trial& t1 = resumed.oracle().get_trial("0001");
  ASSERT_EQ(t1.status, TrialStatus::completed);
  ASSERT_EQ(t1.executions.at(0).size(), 3u);
  for (int e = 0; e < 3; ++e) EXPECT_EQ(t1.executions[0][e].epoch, e);
  EXPECT_FALSE(std::filesystem::exists(p / "trial_0001" / "backup"));  // gone once it ended

  options.directory = reference_dir.string();
  set_global_seed(77);
  RandomSearch reference(build_model, options);
  reference.search(d.x, d.y, fit_options(d, 3));
  const Trial& r1 = reference.oracle().get_trial("0001");
  EXPECT_EQ(r1.hyperparameters.to_json(), t1.hyperparameters.to_json());
  for (int e = 0; e < 3; ++e) {
    const auto& a = r1.executions[0][e].metrics;
    const auto& b = t1.executions[0][e].metrics;
    using Metrics = std::map<std::string, double>;
    EXPECT_EQ(Metrics(a.begin(), a.end()), Metrics(b.begin(), b.end())) << "epoch " << e;
  }
  EXPECT_EQ(*r1.score, *t1.score);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(reference_dir);
}

TEST(TunerTest, FailedTrialsAreRecordedAndTheSearchGoesOn) {
  const Data d = make_data();
  const auto dir = fresh_dir("failed");
  auto build = [](HyperParameters& hp) {
    if (hp.Boolean("explode")) throw TrialFailed("bad configuration: explode=true");
    return build_model(hp);
  };
  RandomSearch tuner(build, {.objective = "val_loss",
                             .max_trials = 8,
                             .max_consecutive_failed_trials = 8,
                             .directory = dir.string(),
                             .project_name = "p",
                             .seed = 2,
                             .verbose = 0});
  tuner.search(d.x, d.y, fit_options(d, 1));
  int failed = 0, completed = 0;
  for (const Trial& t : tuner.oracle().trials()) {
    if (t.status == TrialStatus::failed) {
      ++failed;
      EXPECT_TRUE(t.hyperparameters.get("explode").as_bool());
      EXPECT_NE(t.message.find("explode=true"), std::string::npos);
      const auto j = io::read_json_file(dir / "p" / ("trial_" + t.trial_id) / "trial.json");
      EXPECT_EQ(j.at("status"), "failed");
      EXPECT_NE(j.at("message").get<std::string>().find("bad configuration"), std::string::npos);
    } else {
      ++completed;
      EXPECT_EQ(t.status, TrialStatus::completed);
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(completed, 0);
  EXPECT_EQ(failed + completed, 8);
  EXPECT_NE(tuner.results_summary(10, false).find(fmt::format("{} failed", failed)),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// A build function that builds once (declaring the space) and throws `error` ever after.
template <class E>
std::function<Model(HyperParameters&)> builds_once_then_throws(E error) {
  auto builds = std::make_shared<int>(0);
  return [builds, error](HyperParameters& hp) -> Model {
    hp.Int("units", 2, 8);
    if ((*builds)++ > 0) throw error;
    return build_model(hp);
  };
}

TEST(TunerTest, ConsecutiveFailuresStopTheSearchWithAClearError) {
  const Data d = make_data();
  const auto dir = fresh_dir("consecutive");
  RandomSearch tuner(builds_once_then_throws(ValueError("Dense: units must be positive")),
                     {.objective = "val_loss",
                      .max_trials = 10,
                      .directory = dir.string(),
                      .project_name = "p",
                      .seed = 3,
                      .verbose = 0});
  try {
    tuner.search(d.x, d.y, fit_options(d, 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("3 trials failed in a row (max_consecutive_failed_trials=3)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("trial 0002"), std::string::npos) << m;
    EXPECT_NE(m.find("units must be positive"), std::string::npos) << m;
  }
  EXPECT_EQ(tuner.oracle().trials().size(), 3u);
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, ASearchWhoseEveryTrialFailedSaysSoInsteadOfReturningNoBestTrial) {
  const Data d = make_data();
  const auto dir = fresh_dir("all_failed");
  RandomSearch tuner(builds_once_then_throws(TrialFailed("no model today")),
                     {.objective = "val_loss",
                      .max_trials = 2,
                      .directory = dir.string(),
                      .project_name = "p",
                      .seed = 3,
                      .verbose = 0});
  try {
    tuner.search(d.x, d.y, fit_options(d, 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "search ended without a completed trial (2 failed); the last, trial 0001, failed "
                 "with: no model today");
  }
  EXPECT_TRUE(tuner.get_best_hyperparameters(4).empty());
  std::filesystem::remove_all(dir);
}

// Runs `before_fit` with the number of the fit (0, 1, ...) before each one, to throw from it.
struct ThrowingHyperModel : HyperModel {
  std::function<void(int)> before_fit = [](int) {};
  int fits = 0;
  Model build(HyperParameters& hp) override { return build_model(hp); }
  train::History fit(HyperParameters& hp, Model& model, const TrainData& d,
                     const train::FitOptions& o) override {
    before_fit(fits++);
    return HyperModel::fit(hp, model, d, o);
  }
};

TEST(TunerTest, AnIoErrorDuringATrialStopsTheSearchWithThatErrorAndAResumeRerunsTheTrial) {
  const Data d = make_data();
  const auto dir = fresh_dir("ioerror");
  auto hm = std::make_shared<ThrowingHyperModel>();
  hm->before_fit = [](int fit) {
    if (fit == 1) throw IoError("/scratch/kt/p/trial_0001/checkpoint: No space left on device");
  };
  const RandomSearchOptions options{.objective = "val_loss",
                                    .max_trials = 3,
                                    .directory = dir.string(),
                                    .project_name = "p",
                                    .seed = 8,
                                    .verbose = 0};
  RandomSearch tuner(hm, options);
  EXPECT_THROW(
      {
        try {
          tuner.search(d.x, d.y, fit_options(d, 1));
        } catch (const IoError& e) {
          EXPECT_NE(std::string(e.what()).find("trial_0001/checkpoint: No space left on device"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      IoError);
  // Not a failed trial: it stays running, as if the process had died, and no trial follows.
  ASSERT_EQ(tuner.oracle().trials().size(), 2u);
  EXPECT_EQ(tuner.oracle().get_trial("0000").status, TrialStatus::completed);
  EXPECT_EQ(tuner.oracle().get_trial("0001").status, TrialStatus::running);
  const auto interrupted = tuner.oracle().get_trial("0001").hyperparameters.to_json().at("values");

  hm->before_fit = [](int) {};
  RandomSearch resumed(hm, options);
  resumed.search(d.x, d.y, fit_options(d, 1));
  ASSERT_EQ(resumed.oracle().trials().size(), 3u);
  for (const Trial& t : resumed.oracle().trials()) {
    EXPECT_EQ(t.status, TrialStatus::completed) << t.trial_id;
  }
  EXPECT_EQ(resumed.oracle().get_trial("0001").hyperparameters.to_json().at("values"), interrupted);
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, AValueErrorOrTrialFailedFromFitFailsOnlyThatTrial) {
  const Data d = make_data();
  const auto dir = fresh_dir("fit_fails");
  auto hm = std::make_shared<ThrowingHyperModel>();
  hm->before_fit = [](int fit) {
    if (fit == 0) throw ValueError("Dense: units must be positive. Received: units=0");
    if (fit == 1) throw TrialFailed("the loss diverged");
  };
  RandomSearch tuner(hm, {.objective = "val_loss",
                          .max_trials = 3,
                          .directory = dir.string(),
                          .project_name = "p",
                          .seed = 9,
                          .verbose = 0});
  tuner.search(d.x, d.y, fit_options(d, 1));
  ASSERT_EQ(tuner.oracle().trials().size(), 3u);
  const Trial& t0 = tuner.oracle().get_trial("0000");
  const Trial& t1 = tuner.oracle().get_trial("0001");
  EXPECT_EQ(t0.status, TrialStatus::failed);
  EXPECT_NE(t0.message.find("units must be positive"), std::string::npos) << t0.message;
  EXPECT_EQ(t1.status, TrialStatus::failed);
  EXPECT_NE(t1.message.find("the loss diverged"), std::string::npos) << t1.message;
  EXPECT_EQ(tuner.oracle().get_trial("0002").status, TrialStatus::completed);
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, NanLossFailsTheTrial) {
  const Data d = make_data();
  const auto dir = fresh_dir("nan");
  auto build = [](HyperParameters& hp) {
    hp.Int("units", 2, 4);
    Model model = Sequential({layers::Dense(2, "softmax")}, {.input_shape = {4}});
    std::shared_ptr<optim::Optimizer> o = optim::get("sgd");
    o->set_learning_rate(1e30);  // diverges at once
    model.compile(o, "sparse_categorical_crossentropy", {"accuracy"});
    return model;
  };
  Data big = d;
  big.x = mul(d.x, 1e20);
  RandomSearch tuner(build, {.objective = "val_loss",
                             .max_trials = 1,
                             .directory = dir.string(),
                             .project_name = "p",
                             .seed = 3,
                             .verbose = 0});
  EXPECT_THROW(tuner.search(big.x, big.y, fit_options(big, 2)), Error);  // no trial completed
  ASSERT_EQ(tuner.oracle().trials().size(), 1u);
  const Trial& t = tuner.oracle().trials()[0];
  EXPECT_EQ(t.status, TrialStatus::failed);
  EXPECT_NE(t.message.find("never finite"), std::string::npos) << t.message;
  std::filesystem::remove_all(dir);
}

struct CountingCallback : train::Callback {
  explicit CountingCallback(std::shared_ptr<int> copies, std::shared_ptr<int> epochs)
      : copies(copies), epochs(epochs) {}
  std::shared_ptr<Callback> clone() const override {
    ++*copies;
    return std::make_shared<CountingCallback>(copies, epochs);
  }
  void on_train_begin(const train::Logs&) override { EXPECT_EQ(seen, 0) << "a copy was reused"; }
  void on_epoch_end(int, const train::Logs&) override {
    ++seen;
    ++*epochs;
  }
  std::shared_ptr<int> copies, epochs;
  int seen = 0;
};

TEST(TunerTest, CallbacksAreCopiedPerExecutionAndMetricsAveraged) {
  const Data d = make_data();
  const auto dir = fresh_dir("callbacks");
  auto copies = std::make_shared<int>(0), epochs = std::make_shared<int>(0);
  auto original = std::make_shared<CountingCallback>(copies, epochs);
  auto stopper = std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.monitor = "val_loss", .patience = 50});
  RandomSearch tuner(build_model, {.objective = "val_loss",
                                   .max_trials = 2,
                                   .executions_per_trial = 2,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 4,
                                   .verbose = 0});
  auto fo = fit_options(d, 3);
  fo.callbacks = {original, stopper};
  tuner.search(d.x, d.y, fo);
  EXPECT_EQ(*copies, 4);   // 2 trials x 2 executions
  EXPECT_EQ(*epochs, 12);  // every copy saw 3 epochs
  EXPECT_EQ(original->seen, 0);
  EXPECT_EQ(stopper->best_epoch(), -1);  // the user's EarlyStopping itself never ran
  for (const Trial& t : tuner.oracle().trials()) {
    ASSERT_EQ(t.executions.size(), 2u);
    double sum = 0;
    for (const auto& e : t.executions) {
      double best = INFINITY;
      for (const auto& r : e) {
        for (const auto& [k, v] : r.metrics)
          if (k == "val_loss") best = std::min(best, v);
      }
      sum += best;
    }
    EXPECT_NEAR(*t.score, sum / 2, 1e-12);
  }
  std::filesystem::remove_all(dir);
}

struct CheckingHyperModel : test_data::PromotionChecker {
  Model build(HyperParameters& hp) override { return build_model(hp); }
};

TEST(TunerTest, HyperbandPromotedTrialsResumeFromTheirParentsWeights) {
  const auto dir = fresh_dir("hyperband");
  auto hm = std::make_shared<CheckingHyperModel>();
  hm->data = make_data();
  Hyperband tuner(hm, {.objective = "val_loss",
                       .max_epochs = 3,
                       .factor = 3,
                       .directory = dir.string(),
                       .project_name = "p",
                       .seed = 5,
                       .verbose = 0});
  hm->tuner = &tuner;
  tuner.search(hm->data.x, hm->data.y, fit_options(hm->data, 100));
  // max_epochs 3, factor 3: s=1: 3 x 1 epoch, best 1 continues to 3; s=0: 2 x 3 epochs.
  ASSERT_EQ(tuner.oracle().trials().size(), 6u);
  EXPECT_EQ(hm->promoted, 1);
  const Trial& promoted = tuner.oracle().get_trial("0003");
  ASSERT_EQ(promoted.executions.size(), 1u);
  ASSERT_EQ(promoted.executions[0].size(), 2u);  // epochs 1 and 2 only
  EXPECT_EQ(promoted.executions[0][0].epoch, 1);
  EXPECT_EQ(tuner.oracle().get_trial("0004").executions[0].size(), 3u);
  std::filesystem::remove_all(dir);
}

// A parent whose best epoch is not its last: the objective is the largest validation loss, which
// a model that learns reaches at its first epoch, so each promoted trial's parent peaked early.
// Going on from the best epoch instead would lose the parent's later epochs (and fail the checks).
TEST(TunerTest, HyperbandPromotedTrialsGoOnFromTheParentsLastEpochNotItsBest) {
  const auto dir = fresh_dir("hyperband_last");
  auto hm = std::make_shared<CheckingHyperModel>();
  hm->data = make_data();
  Hyperband tuner(hm, {.objective = Objective("val_loss", "max"),
                       .max_epochs = 9,
                       .factor = 3,
                       .directory = dir.string(),
                       .project_name = "p",
                       .seed = 6,
                       .verbose = 0});
  hm->tuner = &tuner;
  tuner.search(hm->data.x, hm->data.y, fit_options(hm->data, 100));
  // s=2: 9 at 1 epoch, 3 on to 3, 1 on to 9; s=1: 5 at 3, 1 on to 9; s=0: 3 at 9.
  ASSERT_EQ(tuner.oracle().trials().size(), 22u);
  EXPECT_EQ(hm->promoted, 5);
  EXPECT_GE(hm->from_a_later_epoch_than_the_best, 2);
  // A trial in its bracket's last round is never promoted, so its end state is not kept.
  int last_round = 0;
  for (const Trial& t : tuner.oracle().trials()) {
    if (t.hyperparameters.get(kTunerRound).as_int() !=
        t.hyperparameters.get(kTunerBracket).as_int())
      continue;
    ++last_round;
    EXPECT_FALSE(std::filesystem::exists(tuner.end_state_path(t.trial_id))) << t.trial_id;
    EXPECT_TRUE(std::filesystem::exists(tuner.checkpoint_path(t.trial_id))) << t.trial_id;
  }
  EXPECT_EQ(last_round, 5);  // 1 + 1 + 3
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, BayesianOptimizationRunsOnAModel) {
  const Data d = make_data();
  const auto dir = fresh_dir("bayes");
  BayesianOptimization tuner(build_model, {.objective = "val_accuracy",
                                           .max_trials = 4,
                                           .directory = dir.string(),
                                           .project_name = "p",
                                           .seed = 6,
                                           .verbose = 0,
                                           .num_initial_points = 2});
  tuner.search(d.x, d.y, fit_options(d, 1));
  ASSERT_EQ(tuner.oracle().trials().size(), 4u);
  for (const Trial& t : tuner.oracle().trials())
    EXPECT_EQ(t.status, TrialStatus::completed) << t.message;
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, SummariesNameTheSpaceAndTheBestTrials) {
  const Data d = make_data();
  const auto dir = fresh_dir("summary");
  RandomSearch tuner(build_model, {.objective = "val_accuracy",
                                   .max_trials = 2,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 7,
                                   .verbose = 0});
  const std::string space = tuner.search_space_summary(false);
  EXPECT_NE(space.find("Default search space size: 3"), std::string::npos) << space;
  EXPECT_NE(space.find("learning_rate (Float)\n  [0.001, 0.1], log, default 0.001"),
            std::string::npos)
      << space;
  tuner.search(d.x, d.y, fit_options(d, 1));
  const std::string results = tuner.results_summary(1, false);
  const Trial best = tuner.oracle().get_best_trials(1)[0];
  EXPECT_NE(results.find("Objective(name=\"val_accuracy\", direction=\"max\")"), std::string::npos)
      << results;
  EXPECT_NE(results.find(fmt::format("Trial {} summary", best.trial_id)), std::string::npos)
      << results;
  EXPECT_NE(results.find(fmt::format("units: {}", best.hyperparameters.get("units").as_int())),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// The rows a trial's kept predictions must equal: its best model (get_best_models, the
// checkpoint) predicting them at the validation batch size.
void expect_predictions_of_best_models(Tuner& tuner, int n, const Tensor& xv, const Tensor& yv,
                                       int64_t batch_size) {
  const auto trials = tuner.oracle().get_best_trials(n);
  auto models = tuner.get_best_models(n);
  ASSERT_EQ(models.size(), trials.size());
  for (size_t i = 0; i < trials.size(); ++i) {
    const TrialPredictions kept = tuner.validation_predictions(trials[i].trial_id);
    const Tensor want = models[i].predict(xv, {.batch_size = batch_size});
    EXPECT_EQ(kept.predictions.dtype(), DType::float32);
    EXPECT_EQ(kept.predictions.shape(), (Shape{xv.size(0), 2}));
    EXPECT_EQ(kept.predictions.to_vector<float>(), want.to_vector<float>()) << trials[i].trial_id;
    EXPECT_EQ(kept.targets.dtype(), yv.dtype());
    EXPECT_EQ(kept.targets.to_vector<int64_t>(), yv.to_vector<int64_t>());
  }
}

// The objective is the largest validation loss, which a model that learns reaches at its first
// epoch: the best state is not the last one, so predictions taken at the end would differ. Two
// executions: the kept predictions are those of the execution whose checkpoint is kept.
TEST(TunerTest, ValidationPredictionsAreTheBestStatesBitForBit) {
  const Data d = make_data();
  const auto dir = fresh_dir("predictions");
  RandomSearch tuner(build_model, {.objective = Objective("val_loss", "max"),
                                   .max_trials = 3,
                                   .executions_per_trial = 2,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 11,
                                   .verbose = 0});
  auto fo = fit_options(d, 3);
  fo.validation_batch_size = 16;
  tuner.search(d.x, d.y, fo);
  int best_before_last = 0;
  for (const Trial& t : tuner.oracle().trials()) {
    EXPECT_TRUE(std::filesystem::exists(dir / "p" / ("trial_" + t.trial_id) /
                                        "val_predictions.safetensors"));
    best_before_last += t.best_step < 2 ? 1 : 0;
  }
  EXPECT_GE(best_before_last, 1);
  expect_predictions_of_best_models(tuner, 3, d.xv, d.yv, 16);
  // The file is an ordinary safetensors file with the two tensors.
  const auto f = io::load_safetensors(tuner.validation_predictions_path("0000"));
  EXPECT_EQ(f.size(), 2u);
  EXPECT_EQ(f.at("predictions").shape(), (Shape{80, 2}));
  EXPECT_EQ(f.at("targets").shape(), (Shape{80}));
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, ValidationPredictionsOfAValidationSplitAreOfItsRows) {
  const Data d = make_data();
  const auto dir = fresh_dir("predictions_split");
  RandomSearch tuner(build_model, {.objective = "val_accuracy",
                                   .max_trials = 2,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 12,
                                   .verbose = 0});
  tuner.search(d.x, d.y,
               {.batch_size = 32, .epochs = 2, .verbose = 0, .validation_split = 0.25, .seed = 1});
  // 240 rows, the last 60 validate.
  expect_predictions_of_best_models(tuner, 2, d.x.narrow(0, 180, 60), d.y.narrow(0, 180, 60), 32);
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, ValidationPredictionsOfAValidationDatasetFollowItsBatches) {
  const Data d = make_data();
  const auto dir = fresh_dir("predictions_dataset");
  RandomSearch tuner(build_model, {.objective = "val_loss",
                                   .max_trials = 2,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 13,
                                   .verbose = 0});
  tuner.search(d.x, d.y,
               {.batch_size = 32,
                .epochs = 2,
                .verbose = 0,
                .validation_data = data::Dataset::from_tensors({d.xv, d.yv}).batch(16),
                .seed = 1});
  expect_predictions_of_best_models(tuner, 2, d.xv, d.yv, 16);
  std::filesystem::remove_all(dir);
}

// Throws TrialFailed at the end of the second epoch it sees (before the tuner's reporter, which
// comes last): the first trial has saved its first epoch's checkpoint, then fails.
struct FailOnSecondEpoch : train::Callback {
  void on_epoch_end(int, const train::Logs&) override {
    if (++epochs == 2) throw TrialFailed("the loss diverged");
  }
  int epochs = 0;
};

TEST(TunerTest, AFailedTrialOrOneWithoutValidationDataKeepsNoPredictions) {
  const Data d = make_data();
  const auto dir = fresh_dir("predictions_failed");
  RandomSearch tuner(build_model, {.objective = "val_loss",
                                   .max_trials = 2,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 14,
                                   .verbose = 0});
  auto fo = fit_options(d, 2);
  fo.callbacks.push_back(std::make_shared<FailOnSecondEpoch>());  // no clone(): shared
  tuner.search(d.x, d.y, fo);
  ASSERT_EQ(tuner.oracle().get_trial("0000").status, TrialStatus::failed);
  EXPECT_TRUE(std::filesystem::exists(tuner.checkpoint_path("0000")));
  const auto path = tuner.validation_predictions_path("0000");
  EXPECT_FALSE(std::filesystem::exists(path));
  testing::expect_error<IoError>(
      [&] { tuner.validation_predictions("0000"); },
      {path.string() + ": trial 0000 kept no validation predictions (it failed, "
                       "did not finish, or ran without validation data)"});
  EXPECT_NO_THROW(tuner.validation_predictions("0001"));

  RandomSearch unvalidated(build_model, {.objective = "loss",
                                         .max_trials = 1,
                                         .directory = dir.string(),
                                         .project_name = "q",
                                         .seed = 14,
                                         .verbose = 0});
  unvalidated.search(d.x, d.y, {.batch_size = 32, .epochs = 1, .verbose = 0, .seed = 1});
  ASSERT_EQ(unvalidated.oracle().get_trial("0000").status, TrialStatus::completed);
  EXPECT_THROW(unvalidated.validation_predictions("0000"), IoError);
  std::filesystem::remove_all(dir);
}

TEST(TunerTest, AResumedSearchKeepsTheEarlierTrialsPredictions) {
  const Data d = make_data();
  const auto dir = fresh_dir("predictions_resume");
  RandomSearchOptions options{.objective = "val_accuracy",
                              .max_trials = 2,
                              .directory = dir.string(),
                              .project_name = "p",
                              .seed = 15,
                              .verbose = 0};
  std::vector<std::string> before;
  {
    RandomSearch tuner(build_model, options);
    tuner.search(d.x, d.y, fit_options(d, 1));
    for (const char* id : {"0000", "0001"})
      before.push_back(read(tuner.validation_predictions_path(id)));
  }
  options.max_trials = 3;
  RandomSearch resumed(build_model, options);
  resumed.search(d.x, d.y, fit_options(d, 1));
  ASSERT_EQ(resumed.oracle().trials().size(), 3u);
  EXPECT_EQ(read(resumed.validation_predictions_path("0000")), before[0]);
  EXPECT_EQ(read(resumed.validation_predictions_path("0001")), before[1]);
  expect_predictions_of_best_models(resumed, 3, d.xv, d.yv, 32);
  std::filesystem::remove_all(dir);
}

struct EpochRecorder : HyperModel {
  std::vector<int> epochs;
  std::vector<int64_t> rows;
  Model build(HyperParameters& hp) override { return build_model(hp); }
  train::History fit(HyperParameters& hp, Model& model, const TrainData& d,
                     const train::FitOptions& o) override {
    epochs.push_back(o.epochs);
    rows.push_back(d.x.size(0));
    return HyperModel::fit(hp, model, d, o);
  }
};

// Sleeps in every training batch, so a trial outlasts a short max_seconds whatever the machine.
struct SlowBatches : train::Callback {
  void on_train_batch_end(int64_t, const train::Logs&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
};

TEST(TunerTest, MaxSecondsStopsTheRunningTrialAfterItsBatchAndStartsNoOther) {
  const Data d = make_data();
  const auto dir = fresh_dir("max_seconds");
  RandomSearch tuner(build_model, {.objective = "val_loss",
                                   .max_trials = 20,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 3,
                                   .verbose = 0,
                                   .max_seconds = 0.2});
  train::FitOptions fo = fit_options(d, 50);  // 50 epochs of 8 batches: 8 s at least
  fo.callbacks.push_back(std::make_shared<SlowBatches>());
  tuner.search(d.x, d.y, fo);
  // The first trial stopped in its first epoch or two, was still validated and completed; the
  // search then started nothing more.
  ASSERT_EQ(tuner.oracle().trials().size(), 1u);
  const Trial& t = tuner.oracle().trials()[0];
  EXPECT_EQ(t.status, TrialStatus::completed);
  ASSERT_TRUE(t.score.has_value());
  EXPECT_LT(t.best_step, 10);
  std::filesystem::remove_all(dir);
}

TEST(BestEpochTest, RetrainsOnTrainPlusValidationForBestEpochTimesOnePointTwo) {
  const Data d = make_data();
  EpochRecorder hm;
  HyperParameters hp;
  hp.set("units", int64_t{8});
  hp.set("learning_rate", 0.05);
  hp.set("optimizer", "adam");
  const BestEpochOptions o{
      .max_epochs = 10, .patience = 2, .fit = {.batch_size = 32, .verbose = 0, .seed = 1}};
  set_global_seed(77);  // the same initial weights in both best-epoch searches
  const int best = get_best_epoch(hm, hp, d.x, d.y, d.xv, d.yv, o);
  EXPECT_GE(best, 1);
  EXPECT_LE(best, 10);
  set_global_seed(77);
  Model m = get_best_trained_model(hm, hp, d.x, d.y, d.xv, d.yv, o);
  ASSERT_EQ(hm.epochs.size(), 3u);
  EXPECT_EQ(hm.epochs[0], 10);  // the search for the best epoch
  EXPECT_EQ(hm.rows[2], 320);   // train + validation
  // Same seed, same data: the second best-epoch search finds the same epoch.
  EXPECT_EQ(hm.epochs[2], std::max(1, static_cast<int>(best * 1.2)));
  EXPECT_TRUE(m.compiled());
}

}  // namespace
}  // namespace osprey::tune
