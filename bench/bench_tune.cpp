// Tuning benchmarks (issue 6), a plain binary because each figure is a whole search, not a
// loop Google Benchmark can time:
//   synthetic: median regret after 50 evaluations over 20 seeds on Branin (2-D) and Hartmann-6,
//              BayesianOptimization against RandomSearch (the oracles alone, no models).
//   overhead:  the oracle's own time per trial (create_trial + 10 update_trial + end_trial, with
//              trial.json / oracle.json written atomically) once 100 trials have finished.
//   fmnist:    Hyperband (--max-epochs, default 27, factor 3: 357 epochs) against RandomSearch
//              given at least three times the epochs (40 trials x 27), best validation accuracy of
//              the Fashion-MNIST MLP space on a subset (--train-samples 6000 training images,
//              --val-samples 10000 validation images from the tail of the training split), over
//              --fmnist-seeds seeds starting at --fmnist-first-seed, and each tuner's best model's
//              accuracy on the 10000 test images. --hb-sampler bayesian gives
//              Hyperband its model-based sampler (hyperband.h); --fmnist-space wide searches
//              wider ranges (wide_space).
//   bench_tune [--suite all|synthetic|overhead|fmnist] [--seeds N] [--fmnist-seeds N]
//              [--fmnist-first-seed S] [--fmnist-tuners both|hyperband|random] [--max-epochs E]
//              [--train-samples N] [--val-samples N] [--hb-sampler random|bayesian] [--hb-beta B]
//              [--hb-acquisition ucb|ei] [--fmnist-space default|wide] [--fmnist-dir DIR]
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numbers>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/tune/builtin_tuners.h"

namespace os = osprey;
namespace tune = osprey::tune;

namespace {

double branin(const std::vector<double>& v) {
  const double x = v[0], y = v[1];
  const double b = 5.1 / (4 * std::numbers::pi * std::numbers::pi), c = 5 / std::numbers::pi,
               t = 1 / (8 * std::numbers::pi);
  return std::pow(y - b * x * x + c * x - 6, 2) + 10 * (1 - t) * std::cos(x) + 10;
}

double hartmann6(const std::vector<double>& x) {
  static constexpr double a[4] = {1.0, 1.2, 3.0, 3.2};
  static constexpr double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                     {0.05, 10, 17, 0.1, 8, 14},
                                     {3, 3.5, 1.7, 10, 17, 8},
                                     {17, 8, 0.05, 10, 0.1, 14}};
  static constexpr double P[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                     {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                     {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                     {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
  double s = 0;
  for (int i = 0; i < 4; ++i) {
    double e = 0;
    for (int j = 0; j < 6; ++j) e += A[i][j] * (x[j] - P[i][j]) * (x[j] - P[i][j]);
    s += a[i] * std::exp(-e);
  }
  return -s;
}

struct Problem {
  std::string name;
  tune::HyperParameters space;
  double (*f)(const std::vector<double>&);
  double minimum;
};

double run_oracle(tune::Oracle& oracle, const Problem& p, int n) {
  double best = INFINITY;
  for (int i = 0; i < n; ++i) {
    tune::Trial t = oracle.create_trial("bench");
    std::vector<double> x;
    for (const auto& h : p.space.space()) x.push_back(t.hyperparameters.get(h.name).as_double());
    const double v = p.f(x);
    oracle.update_trial(t.trial_id, {{"val_loss", v}}, 0);
    oracle.end_trial(t.trial_id, tune::TrialStatus::completed);
    best = std::min(best, v);
  }
  return best - p.minimum;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void synthetic(int seeds) {
  std::vector<Problem> problems;
  {
    tune::HyperParameters hp;
    hp.Float("x", -5.0, 10.0);
    hp.Float("y", 0.0, 15.0);
    problems.push_back({"Branin", hp, branin, 0.397887});
  }
  {
    tune::HyperParameters hp;
    for (int i = 0; i < 6; ++i) hp.Float(fmt::format("x{}", i), 0.0, 1.0);
    problems.push_back({"Hartmann-6", hp, hartmann6, -3.32237});
  }
  fmt::print("synthetic: median regret after 50 evaluations over {} seeds\n", seeds);
  fmt::print("{:<12} {:>16} {:>16} {:>8}\n", "function", "bayesian", "random", "ratio");
  for (const Problem& p : problems) {
    std::vector<double> bo, rs;
    const auto start = std::chrono::steady_clock::now();
    for (int s = 1; s <= seeds; ++s) {
      tune::BayesianOptimizationOracle b(
          {.max_trials = 50, .seed = static_cast<uint64_t>(s), .hyperparameters = p.space});
      tune::RandomSearchOracle r(
          {.max_trials = 50, .seed = static_cast<uint64_t>(s), .hyperparameters = p.space});
      bo.push_back(run_oracle(b, p, 50));
      rs.push_back(run_oracle(r, p, 50));
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("{:<12} {:>16.6g} {:>16.6g} {:>8.3g}   ({:.1f} s)\n", p.name, median(bo), median(rs),
               median(bo) / median(rs), secs);
  }
}

void overhead() {
  tune::HyperParameters hp;
  hp.Int("units", 32, 512, {.step = 32});
  hp.Int("layers", 1, 4);
  hp.Float("dropout", 0.0, 0.5);
  hp.Float("learning_rate", 1e-4, 1e-2, {.sampling = "log"});
  hp.Choice("optimizer", {"adam", "rmsprop", "sgd"});
  fmt::print(
      "overhead: oracle time per trial (create + 10 updates + end) after 100 finished trials\n");
  for (const std::string kind : {"random", "bayesian"}) {
    for (bool persist : {false, true}) {
      const auto dir = std::filesystem::temp_directory_path() /
                       fmt::format("osprey_bench_tune_{}_{}", kind, ::getpid());
      std::filesystem::remove_all(dir);
      std::unique_ptr<tune::Oracle> oracle;
      const tune::OracleOptions oo{
          .objective = "val_accuracy", .max_trials = 0, .seed = 1, .hyperparameters = hp};
      if (kind == "random")
        oracle = std::make_unique<tune::RandomSearchOracle>(oo);
      else
        oracle = std::make_unique<tune::BayesianOptimizationOracle>(oo);
      if (persist) oracle->set_directory(dir);
      os::Philox noise(3);
      auto one = [&](int i) {
        tune::Trial t = oracle->create_trial("bench");
        for (int e = 0; e < 10; ++e) {
          const auto w = noise(static_cast<uint64_t>(i) * 16 + e);
          oracle->update_trial(
              t.trial_id,
              {{"loss", 1.0 / (e + 1)}, {"val_accuracy", os::Philox::to_unit_double(w[0], w[1])}},
              e);
        }
        oracle->end_trial(t.trial_id, tune::TrialStatus::completed);
      };
      for (int i = 0; i < 100; ++i) one(i);
      const int measured = 10;
      const auto start = std::chrono::steady_clock::now();
      for (int i = 100; i < 100 + measured; ++i) one(i);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count() /
          measured;
      fmt::print("  {:<9} {:<16} {:8.2f} ms/trial\n", kind,
                 persist ? "with directory" : "in memory", ms);
      std::filesystem::remove_all(dir);
    }
  }
}

// The same model over ranges as wide as a user who knows nothing of the problem would set
// (--fmnist-space wide: learning rate over five decades, as in Li et al.'s experiments, units
// 16-1024 on a log scale, up to 4 layers, dropout up to 0.8), where many configurations diverge
// or barely learn: the case early stopping is for. "default" is the CLI's space
// (applications::fashion_mnist_mlp_space).
tune::HyperParameters wide_space() {
  tune::HyperParameters hp;
  hp.Int("units", 16, 1024, {.sampling = "log", .default_value = 256});
  hp.Int("layers", 1, 4, {.default_value = 2});
  hp.Float("dropout", 0.0, 0.8, {.step = 0.1});
  hp.Float("learning_rate", 1e-5, 1.0, {.sampling = "log", .default_value = 1e-3});
  hp.Choice("optimizer", {"adam", "rmsprop", "sgd"});
  return hp;
}

struct EpochCounter : os::train::Callback {
  void on_epoch_end(int, const os::train::Logs&) override { ++epochs; }
  int64_t epochs = 0;
};

struct FmnistOptions {
  int seeds = 3, first_seed = 1, max_epochs = 27;
  std::string tuners =
      "both";  // "hyperband" or "random" runs one side only (its other column reads 0)
  std::string sampler = "random";  // Hyperband's (tune::parse_hyperband_sampler)
  double beta = 2.6;
  std::string acquisition = "ei";
  std::string space = "default";  // or "wide" (wide_space)
  std::string directory;  // where the studies stay (hb<seed>, rs<seed>); empty: a temporary one
  int64_t train_samples = 6000, val_samples = 10000;
};

void fmnist(const FmnistOptions& options) {
  auto data = os::datasets::fashion_mnist::load();
  // Named variables, not a structured binding: the lambdas below capture them (clang 14 cannot
  // capture a binding).
  auto split = data.train.split_tail(10000);
  const auto train = split.first.slice(0, options.train_samples);
  const auto val =
      split.second.slice(0, std::min<int64_t>(options.val_samples, split.second.size()));
  const int max_epochs = options.max_epochs;
  const auto schedule = tune::hyperband_schedule(max_epochs, 3);
  const int64_t hb_budget = tune::hyperband_epoch_budget(schedule);
  // At least three times Hyperband's epochs, so Hyperband spends no more than a third.
  const int rs_trials = static_cast<int>((3 * hb_budget + max_epochs - 1) / max_epochs);
  fmt::print(
      "fmnist: {} space, {} train / {} val images; Hyperband max_epochs={} factor=3 ({} epochs, "
      "sampler {}{}) vs "
      "RandomSearch {} trials x {} epochs\n",
      options.space, train.size(), val.size(), max_epochs, hb_budget, options.sampler,
      options.sampler != "bayesian" ? ""
      : options.acquisition == "ei" ? " ei"
                                    : fmt::format(" ucb beta {}", options.beta),
      rs_trials, max_epochs);
  fmt::print("{:<6} {:>12} {:>10} {:>12} {:>10} {:>10} {:>12} {:>12}\n", "seed", "hb best acc",
             "hb epochs", "rs best acc", "rs epochs", "hb/rs ep", "hb test acc", "rs test acc");
  const bool keep = !options.directory.empty();
  const auto root = keep ? std::filesystem::path(options.directory)
                         : std::filesystem::temp_directory_path() /
                               fmt::format("osprey_bench_tune_fmnist_{}", ::getpid());
  std::vector<double> hb_acc, rs_acc, hb_test, rs_test;
  struct Outcome {
    double val = 0, test = 0;
    int64_t epochs = 0;
  };
  for (int s = options.first_seed; s < options.first_seed + options.seeds; ++s) {
    const auto start = std::chrono::steady_clock::now();
    auto run = [&](bool hyperband) {
      os::set_global_seed(static_cast<uint64_t>(s));
      auto counter = std::make_shared<EpochCounter>();
      os::train::FitOptions fo{.batch_size = 128,
                               .epochs = max_epochs,
                               .verbose = 0,
                               .callbacks = {counter},
                               .validation_data = os::train::ValidationData(val.x, val.y),
                               .seed = static_cast<uint64_t>(s)};
      std::unique_ptr<tune::Tuner> tuner;
      const bool wide = options.space == "wide";
      const tune::HyperParameters space =
          wide ? wide_space() : os::applications::fashion_mnist_mlp_space();
      auto build = [space](tune::HyperParameters& hp) {
        return os::applications::fashion_mnist_tunable_mlp(hp, space);
      };
      if (hyperband) {
        tuner = std::make_unique<tune::Hyperband>(
            build,
            tune::HyperbandOptions{
                .objective = "val_accuracy",
                .max_epochs = max_epochs,
                .factor = 3,
                .directory = root.string(),
                .project_name = fmt::format("hb{}", s),
                .overwrite = true,
                .seed = static_cast<uint64_t>(s),
                .verbose = 0,
                .sampler = tune::parse_hyperband_sampler(options.sampler, "--hb-sampler"),
                .beta = options.beta,
                .acquisition = tune::parse_acquisition(options.acquisition, "--hb-acquisition")});
      } else {
        tuner = std::make_unique<tune::RandomSearch>(
            build, tune::RandomSearchOptions{.objective = "val_accuracy",
                                             .max_trials = rs_trials,
                                             .directory = root.string(),
                                             .project_name = fmt::format("rs{}", s),
                                             .overwrite = true,
                                             .seed = static_cast<uint64_t>(s),
                                             .verbose = 0});
      }
      tuner->search(train.x, train.y, fo);
      const auto best = tuner->oracle().get_best_trials(1);
      Outcome out{.val = best.empty() ? 0.0 : *best[0].score, .epochs = counter->epochs};
      // The best trial's best-epoch weights on the 10000 test images, which took no part in
      // the search: the maximum of many noisy validation scores is biased upward, this is not.
      for (os::Model& m : tuner->get_best_models(1))
        out.test = m.evaluate(data.test.x, data.test.y).at("accuracy");
      return out;
    };
    const Outcome h = options.tuners != "random" ? run(true) : Outcome{};
    const Outcome r = options.tuners != "hyperband" ? run(false) : Outcome{};
    hb_acc.push_back(h.val);
    rs_acc.push_back(r.val);
    hb_test.push_back(h.test);
    rs_test.push_back(r.test);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(
        "{:<6} {:>12.4f} {:>10} {:>12.4f} {:>10} {:>10.3f} {:>12.4f} {:>12.4f}   ({:.0f} s)\n", s,
        h.val, h.epochs, r.val, r.epochs, r.epochs > 0 ? double(h.epochs) / double(r.epochs) : 0.0,
        h.test, r.test, secs);
    std::fflush(stdout);
  }
  fmt::print(
      "median best val accuracy: hyperband {:.4f}, random {:.4f}; median test accuracy of the best "
      "model: "
      "hyperband {:.4f}, random {:.4f}\n",
      median(hb_acc), median(rs_acc), median(hb_test), median(rs_test));
  if (!keep) std::filesystem::remove_all(root);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"osprey tuning benchmarks"};
  std::string suite = "all";
  int seeds = 20;
  FmnistOptions fm;
  app.add_option("--suite", suite, "all, synthetic, overhead or fmnist")
      ->check(CLI::IsMember({"all", "synthetic", "overhead", "fmnist"}));
  app.add_option("--seeds", seeds, "Seeds of the synthetic comparison");
  app.add_option("--fmnist-seeds", fm.seeds, "Seeds of the Fashion-MNIST comparison");
  app.add_option("--fmnist-first-seed", fm.first_seed,
                 "First seed of the Fashion-MNIST comparison");
  app.add_option("--fmnist-tuners", fm.tuners, "both, hyperband or random")
      ->check(CLI::IsMember({"both", "hyperband", "random"}));
  app.add_option("--hb-sampler", fm.sampler, "Hyperband's sampler: random or bayesian")
      ->check(CLI::IsMember({"random", "bayesian"}));
  app.add_option("--hb-beta", fm.beta, "the bayesian sampler's UCB beta");
  app.add_option("--hb-acquisition", fm.acquisition,
                 "the bayesian sampler's acquisition: ucb or ei")
      ->check(CLI::IsMember({"ucb", "ei"}));
  app.add_option("--fmnist-space", fm.space,
                 "the MLP's search space: default (osprey tune's) or wide")
      ->check(CLI::IsMember({"default", "wide"}));
  app.add_option("--fmnist-dir", fm.directory,
                 "keep the studies here (bench/tune_rungs.py reads them)");
  app.add_option("--max-epochs", fm.max_epochs,
                 "Hyperband max_epochs (RandomSearch trials train this long)")
      ->check(CLI::PositiveNumber);
  app.add_option("--train-samples", fm.train_samples, "Fashion-MNIST training images")
      ->check(CLI::PositiveNumber);
  app.add_option("--val-samples", fm.val_samples, "Fashion-MNIST validation images (at most 10000)")
      ->check(CLI::Range(1, 10000));
  CLI11_PARSE(app, argc, argv);
  if (suite == "all" || suite == "synthetic") synthetic(seeds);
  if (suite == "all" || suite == "overhead") overhead();
  if (suite == "all" || suite == "fmnist") fmnist(fm);
  return 0;
}
