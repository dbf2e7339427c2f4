// Hyperband's schedule against Table 1 of Li et al. (max_epochs 81, factor 3), and the oracle
// running its brackets: round sizes, epochs, promotion of the best with their parent named;
// the bayesian (BOHB) sampler: same schedule, new configurations nearer the optimum, resumable;
// parallel workers: brackets overlap instead of idling, and every rung of the schedule still runs.
#include "osprey/tune/hyperband.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "osprey/core/error.h"

namespace osprey::tune {
namespace {

TEST(HyperbandScheduleTest, MatchesTableOneOfLiEtAl) {
  const auto schedule = hyperband_schedule(81, 3);
  ASSERT_EQ(schedule.size(), 5u);
  // {s, {(n_i, r_i) ...}}
  const std::vector<std::pair<int, std::vector<std::pair<int, int>>>> table = {
      {4, {{81, 1}, {27, 3}, {9, 9}, {3, 27}, {1, 81}}},
      {3, {{34, 3}, {11, 9}, {3, 27}, {1, 81}}},
      {2, {{15, 9}, {5, 27}, {1, 81}}},
      {1, {{8, 27}, {2, 81}}},
      {0, {{5, 81}}},
  };
  for (size_t b = 0; b < table.size(); ++b) {
    EXPECT_EQ(schedule[b].s, table[b].first);
    ASSERT_EQ(schedule[b].rungs.size(), table[b].second.size()) << "s=" << table[b].first;
    for (size_t i = 0; i < table[b].second.size(); ++i) {
      EXPECT_EQ(schedule[b].rungs[i].num_trials, table[b].second[i].first)
          << "s=" << table[b].first << " i=" << i;
      EXPECT_EQ(schedule[b].rungs[i].epochs, table[b].second[i].second)
          << "s=" << table[b].first << " i=" << i;
    }
  }
}

TEST(HyperbandScheduleTest, SmallAndUnevenBudgets) {
  const auto s9 = hyperband_schedule(9, 3);
  ASSERT_EQ(s9.size(), 3u);
  EXPECT_EQ(s9[0].rungs.size(), 3u);
  EXPECT_EQ(s9[0].rungs[0].num_trials, 9);
  EXPECT_EQ(s9[0].rungs[0].epochs, 1);
  EXPECT_EQ(s9[0].rungs.back().epochs, 9);
  const auto s10 = hyperband_schedule(10, 3);  // not a power of 3: the last rung is still 10
  for (const auto& b : s10) EXPECT_EQ(b.rungs.back().epochs, 10);
  EXPECT_EQ(hyperband_schedule(1, 3).size(), 1u);
  EXPECT_THROW(hyperband_schedule(0, 3), ValueError);
  EXPECT_THROW(hyperband_schedule(9, 1), ValueError);
  // One iteration at 9/3: s=2: 9x1 + 3x2 + 1x6, s=1: 5x3 + 1x6, s=0: 3x9.
  EXPECT_EQ(hyperband_epoch_budget(s9), 9 + 6 + 6 + 15 + 6 + 27);
}

TEST(HyperbandOracleTest, RunsEveryBracketAndPromotesTheBest) {
  HyperParameters hp;
  hp.Float("x", 0.0, 1.0);
  HyperbandOracle oracle(
      {.objective = "val_loss", .max_trials = 0, .seed = 3, .hyperparameters = hp},
      {.max_epochs = 9, .factor = 3});
  std::map<std::pair<int64_t, int64_t>, int> per_rung;  // (bracket, round) -> trials
  int64_t epochs_total = 0;
  int trials = 0;
  while (true) {
    Trial t = oracle.create_trial("t");
    if (t.status == TrialStatus::stopped) break;
    ASSERT_EQ(t.status, TrialStatus::running);
    ++trials;
    const auto& v = t.hyperparameters;
    const int64_t bracket = v.get(kTunerBracket).as_int(), round = v.get(kTunerRound).as_int();
    const int64_t epochs = v.get(kTunerEpochs).as_int(),
                  initial = v.get(kTunerInitialEpoch).as_int();
    per_rung[{bracket, round}]++;
    epochs_total += epochs - initial;
    const double x = v.get("x").as_double();
    if (round > 0) {
      // A promoted trial keeps its parent's values and starts where the parent stopped.
      const Trial& parent = oracle.get_trial(v.get(kTunerTrialId).as_string());
      EXPECT_EQ(parent.hyperparameters.get("x").as_double(), x);
      EXPECT_EQ(parent.hyperparameters.get(kTunerEpochs).as_int(), initial);
      EXPECT_EQ(parent.hyperparameters.get(kTunerRound).as_int(), round - 1);
    } else {
      EXPECT_EQ(initial, 0);
    }
    for (int64_t e = initial; e < epochs; ++e)
      oracle.update_trial(t.trial_id, {{"val_loss", x + 1.0 / (e + 1)}}, e);
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  }
  EXPECT_EQ((per_rung[{2, 0}]), 9);
  EXPECT_EQ((per_rung[{2, 1}]), 3);
  EXPECT_EQ((per_rung[{2, 2}]), 1);
  EXPECT_EQ((per_rung[{1, 0}]), 5);
  EXPECT_EQ((per_rung[{1, 1}]), 1);
  EXPECT_EQ((per_rung[{0, 0}]), 3);
  EXPECT_EQ(trials, 9 + 3 + 1 + 5 + 1 + 3);
  EXPECT_EQ(epochs_total, hyperband_epoch_budget(oracle.schedule()));
  // The final trial of bracket 2 descends from the best x of its first round.
  double best_x0 = 2;
  for (const Trial& t : oracle.trials()) {
    if (t.hyperparameters.get(kTunerBracket).as_int() == 2 &&
        t.hyperparameters.get(kTunerRound).as_int() == 0) {
      best_x0 = std::min(best_x0, t.hyperparameters.get("x").as_double());
    }
  }
  for (const Trial& t : oracle.trials()) {
    if (t.hyperparameters.get(kTunerBracket).as_int() == 2 &&
        t.hyperparameters.get(kTunerRound).as_int() == 2) {
      EXPECT_EQ(t.hyperparameters.get("x").as_double(), best_x0);
    }
  }
}

// max_epochs 3, factor 3: s=1: 3 trials at 1 epoch, then 1 on to 3; s=0: 2 trials at 3 epochs.
// Two workers' worth of running trials and more: a bracket whose round waits for a running trial
// lets the next bracket start, and the oracle is idle only when no bracket is left to start.
TEST(HyperbandOracleTest, ABlockedBracketLetsTheNextOneStartInsteadOfIdling) {
  HyperParameters hp;
  hp.Float("x", 0.0, 1.0);
  HyperbandOracle oracle({.max_trials = 0, .seed = 1, .hyperparameters = hp},
                         {.max_epochs = 3, .factor = 3});
  auto finish = [&](const Trial& t) {
    const auto& v = t.hyperparameters;
    for (int64_t e = v.get(kTunerInitialEpoch).as_int(); e < v.get(kTunerEpochs).as_int(); ++e)
      oracle.update_trial(t.trial_id, {{"val_loss", v.get("x").as_double()}}, static_cast<int>(e));
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  };
  auto where = [](const Trial& t) {
    return std::make_pair(t.hyperparameters.get(kTunerBracket).as_int(),
                          t.hyperparameters.get(kTunerRound).as_int());
  };
  std::vector<Trial> first;
  first.reserve(3);
  for (int i = 0; i < 3; ++i) first.push_back(oracle.create_trial("t"));
  for (const Trial& t : first) EXPECT_EQ(where(t), std::make_pair(int64_t{1}, int64_t{0}));
  // s=1's round waits for its three trials: s=0 starts.
  finish(first[1]);
  const Trial s0a = oracle.create_trial("t");
  ASSERT_EQ(s0a.status, TrialStatus::running);
  EXPECT_EQ(where(s0a), std::make_pair(int64_t{0}, int64_t{0}));
  EXPECT_EQ(s0a.hyperparameters.get(kTunerEpochs).as_int(), 3);
  const Trial s0b = oracle.create_trial("t");
  EXPECT_EQ(where(s0b), std::make_pair(int64_t{0}, int64_t{0}));
  // Both brackets wait and none is left: idle.
  EXPECT_EQ(oracle.create_trial("t").status, TrialStatus::idle);
  // Out of order: the last of s=1's round ends before the first; only then does it promote.
  finish(first[2]);
  EXPECT_EQ(oracle.create_trial("t").status, TrialStatus::idle);
  finish(first[0]);
  const Trial promoted = oracle.create_trial("t");
  ASSERT_EQ(promoted.status, TrialStatus::running);
  EXPECT_EQ(where(promoted), std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(promoted.hyperparameters.get(kTunerEpochs).as_int(), 3);
  const Trial* best = &first[0];
  for (const Trial& t : first) {
    if (t.hyperparameters.get("x").as_double() < best->hyperparameters.get("x").as_double())
      best = &t;
  }
  EXPECT_EQ(promoted.hyperparameters.get(kTunerTrialId).as_string(), best->trial_id);
  // s=0 ends: still idle while the promoted trial runs, stopped once it ended.
  finish(s0b);
  finish(s0a);
  EXPECT_EQ(oracle.create_trial("t").status, TrialStatus::idle);
  finish(promoted);
  EXPECT_EQ(oracle.create_trial("t").status, TrialStatus::stopped);
}

// Workers in parallel: up to `workers` trials run at once and the one that ends next is drawn at
// random. Returns the trials per (bracket, round).
std::map<std::pair<int64_t, int64_t>, int> run_in_parallel(HyperbandOracle& oracle, int workers,
                                                           uint32_t seed, int* idles) {
  std::mt19937 gen(seed);
  std::vector<Trial> running;
  std::map<std::pair<int64_t, int64_t>, int> per_rung;
  while (true) {
    bool stopped = false;
    while (static_cast<int>(running.size()) < workers) {
      Trial t = oracle.create_trial("w");
      if (t.status == TrialStatus::idle) {
        // Idle only while something runs: a running trial must end before anything can start.
        if (running.empty()) {
          ADD_FAILURE() << "idle with no trial running";
          return per_rung;
        }
        ++*idles;
        break;
      }
      if (t.status == TrialStatus::stopped) {
        EXPECT_TRUE(running.empty()) << "stopped while trials still run";
        stopped = true;
        break;
      }
      const auto& v = t.hyperparameters;
      if (v.has_value(kTunerTrialId)) {
        // Promoted from a completed trial of the same bracket's previous round.
        const Trial& parent = oracle.get_trial(v.get(kTunerTrialId).as_string());
        EXPECT_EQ(parent.status, TrialStatus::completed);
        EXPECT_EQ(parent.hyperparameters.get(kTunerBracket).as_int(),
                  v.get(kTunerBracket).as_int());
        EXPECT_EQ(parent.hyperparameters.get(kTunerRound).as_int() + 1,
                  v.get(kTunerRound).as_int());
        EXPECT_EQ(parent.hyperparameters.get(kTunerEpochs).as_int(),
                  v.get(kTunerInitialEpoch).as_int());
      }
      per_rung[{v.get(kTunerBracket).as_int(), v.get(kTunerRound).as_int()}]++;
      running.push_back(std::move(t));
    }
    if (stopped) break;
    const size_t i = std::uniform_int_distribution<size_t>(0, running.size() - 1)(gen);
    const Trial t = running[i];
    running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    const auto& v = t.hyperparameters;
    for (int64_t e = v.get(kTunerInitialEpoch).as_int(); e < v.get(kTunerEpochs).as_int(); ++e)
      oracle.update_trial(t.trial_id, {{"val_loss", v.get("x").as_double()}}, static_cast<int>(e));
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  }
  return per_rung;
}

TEST(HyperbandOracleTest, ParallelWorkersRunEveryRungOfTheSerialSchedule) {
  HyperParameters hp;
  hp.Float("x", 0.0, 1.0);
  for (const int workers : {2, 5, 40}) {
    HyperbandOracle oracle({.max_trials = 0, .seed = 3, .hyperparameters = hp},
                           {.max_epochs = 27, .factor = 3, .hyperband_iterations = 2});
    int idles = 0;
    const auto per_rung = run_in_parallel(oracle, workers, 11 + workers, &idles);
    std::map<std::pair<int64_t, int64_t>, int> expected;
    for (const HyperbandBracket& b : oracle.schedule()) {
      for (size_t i = 0; i < b.rungs.size(); ++i) expected[{b.s, i}] = 2 * b.rungs[i].num_trials;
    }
    EXPECT_EQ(per_rung, expected) << workers << " workers";
    // 40 workers start every bracket of both iterations at once and then wait on promotions.
    if (workers == 40) {
      EXPECT_GT(idles, 0);
    }
  }
}

// A study saved before brackets could overlap keeps its round at the top level of the state:
// it loads as one active bracket and goes on as the serial search would have.
TEST(HyperbandOracleTest, AStudySavedInTheOldFormatResumes) {
  HyperParameters hp;
  hp.Float("x", 0.0, 1.0);
  const HyperbandOracleOptions hb{.max_epochs = 9, .factor = 3};
  auto run = [](HyperbandOracle& o, int n) {
    for (int i = 0; i < n; ++i) {
      Trial t = o.create_trial("t");
      ASSERT_EQ(t.status, TrialStatus::running);
      const auto& v = t.hyperparameters;
      for (int64_t e = v.get(kTunerInitialEpoch).as_int(); e < v.get(kTunerEpochs).as_int(); ++e)
        o.update_trial(t.trial_id, {{"val_loss", v.get("x").as_double()}}, static_cast<int>(e));
      o.end_trial(t.trial_id, TrialStatus::completed);
    }
  };
  HyperbandOracle whole({.max_trials = 0, .seed = 8, .hyperparameters = hp}, hb);
  run(whole, 22);
  HyperbandOracle a({.max_trials = 0, .seed = 8, .hyperparameters = hp}, hb);
  run(a, 11);  // into the second round of s=2: 9 at 1 epoch ended, 2 of 3 promoted trials ended
  nlohmann::json state = a.get_state();
  const nlohmann::json now = state.at("algorithm");  // a copy: state is changed below
  ASSERT_EQ(now.at("brackets").size(), 1u);
  const nlohmann::json& b = now.at("brackets")[0];
  EXPECT_EQ(b.at("round").get<int>(), 1);
  nlohmann::json old = {{"max_epochs", 9},
                        {"factor", 3},
                        {"sampler", "random"},
                        {"hyperband_iterations", 1},
                        {"iteration", 0},
                        {"bracket", 0},
                        {"round", b.at("round")},
                        {"round_trials", b.at("round_trials")},
                        {"promote", b.at("promote")}};
  state["algorithm"] = old;
  HyperbandOracle c({.max_trials = 0, .seed = 8, .hyperparameters = hp}, hb);
  c.set_state(state);
  EXPECT_EQ(c.get_state().at("algorithm"), now);
  run(c, 11);
  ASSERT_EQ(c.trials().size(), 22u);
  for (size_t i = 11; i < 22; ++i) {
    const auto& want = whole.trials()[i].hyperparameters;
    const auto& got = c.trials()[i].hyperparameters;
    EXPECT_EQ(got.get("x").as_double(), want.get("x").as_double()) << i;
    EXPECT_EQ(got.get(kTunerBracket).as_int(), want.get(kTunerBracket).as_int()) << i;
    EXPECT_EQ(got.get(kTunerRound).as_int(), want.get(kTunerRound).as_int()) << i;
  }
  EXPECT_EQ(c.create_trial("t").status, TrialStatus::stopped);
  // An old study that had run its last bracket loads as done.
  old["iteration"] = 1;
  old["round"] = 0;
  old["round_trials"] = nlohmann::json::array();
  old["promote"] = nlohmann::json::array();
  state["algorithm"] = old;
  HyperbandOracle d({.max_trials = 0, .seed = 8, .hyperparameters = hp}, hb);
  d.set_state(state);
  EXPECT_EQ(d.create_trial("t").status, TrialStatus::stopped);
}

TEST(HyperbandOracleTest, StateSurvivesAReload) {
  HyperParameters hp;
  hp.Float("x", 0.0, 1.0);
  const auto dir =
      std::filesystem::temp_directory_path() / ("osprey_hb_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::vector<std::string> ids_a;
  {
    HyperbandOracle a({.max_trials = 0, .seed = 5, .hyperparameters = hp},
                      {.max_epochs = 9, .factor = 3});
    a.set_directory(dir);
    for (int i = 0; i < 11; ++i) {  // into the second round of the first bracket
      Trial t = a.create_trial("t");
      a.update_trial(t.trial_id, {{"val_loss", t.hyperparameters.get("x").as_double()}}, 0);
      a.end_trial(t.trial_id, TrialStatus::completed);
    }
  }
  HyperbandOracle b({.max_trials = 0, .seed = 5, .hyperparameters = hp},
                    {.max_epochs = 9, .factor = 3});
  b.set_directory(dir);
  ASSERT_TRUE(b.reload());
  const Trial next = b.create_trial("t");
  EXPECT_EQ(next.trial_id, "0011");
  EXPECT_EQ(next.hyperparameters.get(kTunerRound).as_int(), 1);
  EXPECT_TRUE(next.hyperparameters.has_value(kTunerTrialId));
  HyperbandOracle c({.max_trials = 0, .seed = 5, .hyperparameters = hp},
                    {.max_epochs = 27, .factor = 3});
  c.set_directory(dir);
  EXPECT_THROW(c.reload(), IoError);
  std::filesystem::remove_all(dir);
}

// A 2-D bowl with its minimum at (0.3, 0.7); fewer epochs add a budget-dependent offset and a
// deterministic wobble, so low budgets rank configurations only roughly.
double bowl_loss(const HyperParameters& v, int64_t epoch) {
  const double x = v.get("x").as_double(), y = v.get("y").as_double();
  return (x - 0.3) * (x - 0.3) + (y - 0.7) * (y - 0.7) +
         (0.5 + 0.02 * std::sin(40 * x + 17 * y)) / (epoch + 1);
}

HyperParameters bowl_space() {
  HyperParameters hp;
  hp.Float("x", 0.0, 1.0);
  hp.Float("y", 0.0, 1.0);
  return hp;
}

// Runs the search to the end (or `stop_after` trials); every trial reports bowl_loss per epoch.
void run_bowl(HyperbandOracle& oracle, int stop_after = 1 << 30) {
  for (int n = 0; n < stop_after; ++n) {
    Trial t = oracle.create_trial("t");
    if (t.status == TrialStatus::stopped) return;
    const auto& v = t.hyperparameters;
    for (int64_t e = v.get(kTunerInitialEpoch).as_int(); e < v.get(kTunerEpochs).as_int(); ++e) {
      oracle.update_trial(t.trial_id, {{"val_loss", bowl_loss(v, e)}}, e);
    }
    oracle.end_trial(t.trial_id, TrialStatus::completed);
  }
}

TEST(HyperbandOracleTest, BayesianSamplerKeepsTheScheduleAndSamplesNearTheOptimum) {
  double distance[2] = {
      0, 0};  // random, bayesian: mean distance of new configurations after bracket 0
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::map<std::pair<int64_t, int64_t>, int> per_rung[2];
    for (int k = 0; k < 2; ++k) {
      HyperbandOracle oracle(
          {.max_trials = 0, .seed = seed, .hyperparameters = bowl_space()},
          {.max_epochs = 27,
           .factor = 3,
           .sampler = k == 0 ? HyperbandSampler::random : HyperbandSampler::bayesian});
      run_bowl(oracle);
      std::set<std::string> keys;
      int later = 0;
      double sum = 0;
      for (const Trial& t : oracle.trials()) {
        const auto& v = t.hyperparameters;
        per_rung[k][{v.get(kTunerBracket).as_int(), v.get(kTunerRound).as_int()}]++;
        if (v.get(kTunerRound).as_int() != 0) continue;
        EXPECT_TRUE(keys.insert(v.get("x").to_string() + "," + v.get("y").to_string()).second)
            << "seed " << seed << ": a configuration was proposed twice";
        if (v.get(kTunerBracket).as_int() == 3)
          continue;  // the first bracket has nothing to learn from
        sum += std::hypot(v.get("x").as_double() - 0.3, v.get("y").as_double() - 0.7);
        ++later;
      }
      ASSERT_EQ(later, 12 + 6 + 4);
      distance[k] += sum / later / 5;
    }
    EXPECT_EQ(per_rung[0], per_rung[1]) << "seed " << seed;
  }
  // Uniform points lie about 0.4 from (0.3, 0.7) on average; the model's should be much nearer.
  EXPECT_GT(distance[0], 0.3);
  EXPECT_LT(distance[1], 0.8 * distance[0])
      << "random " << distance[0] << ", bayesian " << distance[1];
}

TEST(HyperbandOracleTest, BayesianSamplerResumesWhereItStopped) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("osprey_hb_bohb_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const HyperbandOracleOptions hb{
      .max_epochs = 27, .factor = 3, .sampler = HyperbandSampler::bayesian};
  HyperbandOracle whole({.max_trials = 0, .seed = 7, .hyperparameters = bowl_space()}, hb);
  run_bowl(whole, 46);  // into bracket s=2, whose new configurations come from the model
  {
    HyperbandOracle a({.max_trials = 0, .seed = 7, .hyperparameters = bowl_space()}, hb);
    a.set_directory(dir);
    run_bowl(a, 44);
  }
  HyperbandOracle b({.max_trials = 0, .seed = 7, .hyperparameters = bowl_space()}, hb);
  b.set_directory(dir);
  ASSERT_TRUE(b.reload());
  run_bowl(b, 2);
  ASSERT_EQ(b.trials().size(), 46u);
  for (size_t i = 40; i < 46; ++i) {
    EXPECT_EQ(b.trials()[i].hyperparameters.get("x").as_double(),
              whole.trials()[i].hyperparameters.get("x").as_double());
    EXPECT_EQ(b.trials()[i].hyperparameters.get("y").as_double(),
              whole.trials()[i].hyperparameters.get("y").as_double());
  }
  HyperbandOracle random({.max_trials = 0, .seed = 7, .hyperparameters = bowl_space()},
                         {.max_epochs = 27, .factor = 3});
  random.set_directory(dir);
  try {
    random.reload();
    ADD_FAILURE() << "a bayesian search resumed as a random one";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the saved search used sampler \"bayesian\", this one \"random\""),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(HyperbandOracleTest, BadSamplerOptionsAreRefused) {
  auto message = [](HyperbandOracleOptions hb) {
    try {
      HyperbandOracle o({.max_trials = 0, .seed = 1, .hyperparameters = bowl_space()}, hb);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({.max_epochs = 9, .random_fraction = 1.5}),
            "Hyperband: random_fraction must be in [0, 1]. Received: 1.5");
  EXPECT_EQ(message({.max_epochs = 9, .bayesian = {.alpha = 0}}),
            "Hyperband: alpha must be positive. Received: 0");
}

// The sampler and the acquisition are enums; their names are what configuration files, saved
// searches and the command line carry.
TEST(HyperbandOracleTest, SamplerAndAcquisitionNamesRoundTripAndUnknownNamesAreRefused) {
  for (HyperbandSampler s : {HyperbandSampler::random, HyperbandSampler::bayesian})
    EXPECT_EQ(parse_hyperband_sampler(hyperband_sampler_name(s), "test"), s);
  for (Acquisition a : {Acquisition::ucb, Acquisition::ei})
    EXPECT_EQ(parse_acquisition(acquisition_name(a), "test"), a);
  auto message = [](auto parse, const char* name) {
    try {
      parse(name, "study.json: algorithm.sampler");
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(parse_hyperband_sampler, "tpe"),
            "study.json: algorithm.sampler: the sampler must be random or bayesian. Received: "
            "'tpe'");
  EXPECT_EQ(message(parse_acquisition, "pi"),
            "study.json: algorithm.sampler: the acquisition must be ucb or ei. Received: 'pi'");
}

}  // namespace
}  // namespace osprey::tune
