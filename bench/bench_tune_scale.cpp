// Tuning at scale (issue 24), a plain binary because each figure is a whole search:
//   algorithms: ASHA against Hyperband and RandomSearch at the same epoch budget (Hyperband's one
//               iteration for --max-epochs, factor 3: 69 epochs for 9), best validation accuracy
//               of the Fashion-MNIST MLP space (osprey tune's) on a subset, over the seeds
//               --first-seed .. --first-seed + --seeds - 1 (fixed in advance: 1..7), and each
//               best model's accuracy on the 10000 test images. Every tuner trains exactly the
//               budget: RandomSearch and ASHA are cut when it is spent.
//   service:    oracle requests per second with --clients tuner workers (threads, each its own
//               gRPC channel) on loopback, each running trials of --updates epoch reports;
//               with the oracle persisting itself (trial.json and oracle.json, atomic writes) and
//               without a directory.
//   bench_tune_scale [--suite all|algorithms|service] [--seeds N] [--first-seed S]
//                    [--max-epochs E] [--train-samples N] [--val-samples N] [--clients N]
//                    [--seconds S] [--updates N]
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/oracle_service.h"

namespace os = osprey;
namespace tune = osprey::tune;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Thrown by the build once the budget is spent: any error but TrialFailed ends a search.
struct BudgetSpent : std::exception {};

// Counts the epochs trained across a whole search and stops the trial that spends the last one
// after it: every tuner trains exactly `budget` epochs (Hyperband's schedule spends it by itself).
struct Budget : os::train::Callback {
  explicit Budget(int64_t b) : left(b) {}
  bool searching = true;  // get_best_models builds after the search: no budget then
  void on_epoch_end(int, const os::train::Logs&) override {
    if (--left <= 0) model().stop_training() = true;
  }
  int64_t left;
};

struct AlgorithmOptions {
  int seeds = 7, first_seed = 1, max_epochs = 9;
  int64_t train_samples = 4000, val_samples = 2000;
};

void algorithms(const AlgorithmOptions& o) {
  auto data = os::datasets::fashion_mnist::load();
  auto [train, val] = data.train.split_tail(10000);
  train = train.slice(0, o.train_samples);
  val = val.slice(0, std::min<int64_t>(o.val_samples, val.size()));
  const int64_t budget = tune::hyperband_epoch_budget(tune::hyperband_schedule(o.max_epochs, 3));
  fmt::print(
      "algorithms: {} train / {} val images, max_epochs {}, factor 3, {} epochs each (Hyperband's "
      "one iteration)\n",
      train.size(), val.size(), o.max_epochs, budget);
  fmt::print("{:<5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}\n", "seed", "asha val",
             "hb val", "rs val", "asha test", "hb test", "rs test", "asha n", "rs n");
  const auto root = std::filesystem::temp_directory_path() /
                    fmt::format("osprey_bench_tune_scale_{}", ::getpid());
  std::vector<double> val_acc[3], test_acc[3];
  for (int s = o.first_seed; s < o.first_seed + o.seeds; ++s) {
    double v[3] = {}, t[3] = {};
    size_t trials[3] = {};
    for (int k = 0; k < 3; ++k) {  // 0 ASHA, 1 Hyperband, 2 RandomSearch
      os::set_global_seed(static_cast<uint64_t>(s));
      auto spent = std::make_shared<Budget>(budget);
      auto build = [spent](tune::HyperParameters& hp) {
        if (spent->searching && spent->left <= 0) throw BudgetSpent();
        return os::applications::fashion_mnist_tunable_mlp(hp);  // osprey tune's MLP and space
      };
      const std::string dir = root.string();
      const auto seed = static_cast<uint64_t>(s);
      std::unique_ptr<tune::Tuner> tuner;
      if (k == 0) {
        tuner = std::make_unique<tune::Asha>(
            build, tune::AshaOptions{.objective = "val_accuracy",
                                     .max_epochs = o.max_epochs,
                                     .min_epochs = 1,
                                     .factor = 3,
                                     .max_trials = 1000,
                                     .directory = dir,
                                     .project_name = fmt::format("asha{}", s),
                                     .overwrite = true,
                                     .seed = seed,
                                     .verbose = 0});
      } else if (k == 1) {
        tuner = std::make_unique<tune::Hyperband>(
            build, tune::HyperbandOptions{.objective = "val_accuracy",
                                          .max_epochs = o.max_epochs,
                                          .factor = 3,
                                          .directory = dir,
                                          .project_name = fmt::format("hb{}", s),
                                          .overwrite = true,
                                          .seed = seed,
                                          .verbose = 0});
      } else {
        tuner = std::make_unique<tune::RandomSearch>(
            build, tune::RandomSearchOptions{.objective = "val_accuracy",
                                             .max_trials = 1000,
                                             .directory = dir,
                                             .project_name = fmt::format("rs{}", s),
                                             .overwrite = true,
                                             .seed = seed,
                                             .verbose = 0});
      }
      try {
        tuner->search(train.x, train.y,
                      {.batch_size = 128,
                       .epochs = o.max_epochs,
                       .verbose = 0,
                       .callbacks = {spent},
                       .validation_data = os::train::ValidationData(val.x, val.y),
                       .seed = seed});
      } catch (const BudgetSpent&) {
      }
      spent->searching = false;
      const auto best = tuner->oracle().get_best_trials(1);
      v[k] = best.empty() ? 0.0 : *best[0].score;
      for (os::Model& m : tuner->get_best_models(1))
        t[k] = m.evaluate(data.test.x, data.test.y).at("accuracy");
      trials[k] = tuner->oracle().get_best_trials(1 << 30).size();
      val_acc[k].push_back(v[k]);
      test_acc[k].push_back(t[k]);
    }
    fmt::print("{:<5} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>7} {:>7}\n", s, v[0],
               v[1], v[2], t[0], t[1], t[2], trials[0], trials[2]);
    std::fflush(stdout);
  }
  fmt::print("median best val accuracy: ASHA {:.4f}, Hyperband {:.4f}, RandomSearch {:.4f}\n",
             median(val_acc[0]), median(val_acc[1]), median(val_acc[2]));
  fmt::print(
      "median test accuracy of the best model: ASHA {:.4f}, Hyperband {:.4f}, "
      "RandomSearch {:.4f}\n",
      median(test_acc[0]), median(test_acc[1]), median(test_acc[2]));
  int asha_wins = 0;
  for (size_t i = 0; i < val_acc[0].size(); ++i)
    asha_wins += val_acc[0][i] >= std::max(val_acc[1][i], val_acc[2][i]) ? 1 : 0;
  fmt::print("seeds where ASHA's best val accuracy is the highest (ties count): {} of {}\n",
             asha_wins, val_acc[0].size());
  std::filesystem::remove_all(root);
}

struct ServiceOptions {
  int clients = 8;
  double seconds = 5;
  int updates = 10;
};

// Requests per second of one oracle service under `clients` workers, each running trials of
// create + `updates` reports + end as fast as it can.
double service_rate(const ServiceOptions& o, bool persist) {
  tune::HyperParameters space;
  space.Float("x", 0.0, 1.0);
  space.Float("y", 0.0, 1.0);
  const tune::OracleOptions oo{
      .objective = "val_loss", .max_trials = 0, .seed = 1, .hyperparameters = space};
  tune::RandomSearchOracle chief(oo);
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("osprey_bench_oracle_{}", ::getpid());
  std::filesystem::remove_all(dir);
  if (persist) chief.set_directory(dir);
  tune::OracleServer server(chief, {.lease_seconds = 60, .verbose = false});
  std::atomic<bool> stop{false};
  std::atomic<int64_t> requests{0};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(o.clients));
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      auto w = tune::connect_oracle(
          std::make_unique<tune::RandomSearchOracle>(oo),
          {.address = server.address(), .tuner_id = fmt::format("tuner{}", c)});
      while (!stop) {
        const tune::Trial t = w->create_trial("");
        for (int e = 0; e < o.updates; ++e)
          w->update_trial(t.trial_id, {{"val_loss", 1.0 / (e + 1)}, {"loss", 0.5}}, e);
        w->end_trial(t.trial_id, tune::TrialStatus::completed, "");
        requests += o.updates + 2;
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  server.shutdown();
  std::filesystem::remove_all(dir);
  return static_cast<double>(requests.load()) / secs;
}

void service(const ServiceOptions& o) {
  fmt::print("service: {} clients on loopback, trials of create + {} reports + end, {} s each\n",
             o.clients, o.updates, o.seconds);
  for (bool persist : {true, false}) {
    std::vector<double> rates;
    rates.reserve(3);
    for (int r = 0; r < 3; ++r) rates.push_back(service_rate(o, persist));
    fmt::print("  {:<42} median {:>7.0f} requests/s (runs: {:.0f})\n",
               persist ? "persisting (trial.json, oracle.json)" : "in memory (no directory)",
               median(rates), fmt::join(rates, ", "));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"osprey tuning-at-scale benchmarks"};
  std::string suite = "all";
  AlgorithmOptions ao;
  ServiceOptions so;
  app.add_option("--suite", suite, "all, algorithms or service")
      ->check(CLI::IsMember({"all", "algorithms", "service"}));
  app.add_option("--seeds", ao.seeds, "Seeds of the algorithm comparison");
  app.add_option("--first-seed", ao.first_seed, "Its first seed");
  app.add_option("--max-epochs", ao.max_epochs, "max_epochs of ASHA and Hyperband")
      ->check(CLI::PositiveNumber);
  app.add_option("--train-samples", ao.train_samples, "Fashion-MNIST training images")
      ->check(CLI::PositiveNumber);
  app.add_option("--val-samples", ao.val_samples, "Validation images (at most 10000)")
      ->check(CLI::Range(1, 10000));
  app.add_option("--clients", so.clients, "Tuner workers of the service benchmark")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", so.seconds, "Seconds per service run")->check(CLI::PositiveNumber);
  app.add_option("--updates", so.updates, "Epoch reports per trial")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (suite == "all" || suite == "service") service(so);
  if (suite == "all" || suite == "algorithms") algorithms(ao);
  return 0;
}
