// What BackupAndRestore costs (issue 20), in one process, printed as JSON lines: the Fashion-MNIST
// model (applications::fashion_mnist_model, `osprey train`'s) trained for --epochs epochs of 60000
// images at batch 128, without backups (the reference), with a backup at each epoch end, and
// with one every 100 steps. For each: the median epoch time over the epochs, each backup's time
// (timed by two callbacks around BackupAndRestore) and its share of the epoch. Then the time from
// a relaunch's fit() call to its first resumed step (restoring the newest backup) against a fresh
// fit's time to its first step.
//   bench_backup [--model mlp] [--epochs 3] [--dir /tmp/osprey_bench_backup] [--threads 2]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/parallel.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/nn/name_scope.h"
#include "osprey/train/callbacks/backup_and_restore.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace os = osprey;
namespace fs = std::filesystem;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Placed before and after BackupAndRestore: the time between them at a batch or epoch end is the
// backup's (zero when it took none; those are dropped by the caller's threshold).
struct Times {
  std::vector<double> epochs_ms, backup_ms;
  Clock::time_point epoch_start, hook_start;
};
struct Before : os::train::Callback {
  explicit Before(Times* t) : t_(t) {}
  void on_epoch_begin(int, const os::train::Logs&) override { t_->epoch_start = Clock::now(); }
  void on_train_batch_end(int64_t, const os::train::Logs&) override {
    t_->hook_start = Clock::now();
  }
  void on_epoch_end(int, const os::train::Logs&) override { t_->hook_start = Clock::now(); }
  Times* t_;
};
struct After : os::train::Callback {
  explicit After(Times* t, bool steps) : t_(t), steps_(steps) {}
  void on_train_batch_end(int64_t, const os::train::Logs&) override {
    if (steps_) t_->backup_ms.push_back(ms_since(t_->hook_start));
  }
  void on_epoch_end(int, const os::train::Logs&) override {
    if (!steps_) t_->backup_ms.push_back(ms_since(t_->hook_start));
    t_->epochs_ms.push_back(ms_since(t_->epoch_start));
  }
  Times* t_;
  bool steps_;
};
// Records when the first training step of a fit ended, and ends the fit there.
struct FirstStep : os::train::Callback {
  void on_train_batch_end(int64_t, const os::train::Logs&) override {
    if (!done) at = Clock::now();
    done = true;
    model().stop_training() = true;
  }
  Clock::time_point at;
  bool done = false;
};

os::Model build(const std::string& name, uint64_t seed) {
  os::set_global_seed(seed);
  os::nn::clear_session();
  os::Model m = os::applications::fashion_mnist_model(name);
  m.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"BackupAndRestore's cost per backup and its relaunch time"};
  std::string data_dir, model_name = "mlp";
  std::string dir = (fs::temp_directory_path() / "osprey_bench_backup").string();
  int epochs = 3, threads = 2;
  uint64_t seed = 42;
  app.add_option("--model", model_name)->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--epochs", epochs);
  app.add_option("--threads", threads);
  app.add_option("--dir", dir, "Backup folder (removed first and at the end)");
  app.add_option("--data", data_dir);
  CLI11_PARSE(app, argc, argv);
  try {
    os::set_num_threads(threads);
    auto data = os::datasets::fashion_mnist::load({.directory = data_dir});
    const os::Tensor& x = data.train.x;
    const os::Tensor& y = data.train.y;
    double reference_epoch_ms = 0.0;
    for (const std::string freq : {"none", "epoch", "100"}) {
      fs::remove_all(dir);
      os::Model m = build(model_name, seed);
      Times t;
      std::vector<os::train::CallbackPtr> cbs;
      cbs.reserve(
          3);  // (a one-element initializer list then push_back trips GCC 12's -Warray-bounds)
      cbs.push_back(std::make_shared<Before>(&t));
      if (freq != "none") {
        cbs.push_back(
            os::callbacks::BackupAndRestore(dir, {.save_freq = freq, .delete_checkpoint = false}));
      }
      cbs.push_back(std::make_shared<After>(&t, freq == "100"));
      m.fit(x, y,
            {.batch_size = 128, .epochs = epochs, .verbose = 0, .callbacks = cbs, .seed = seed});
      const double epoch_ms = median(t.epochs_ms);
      if (freq == "none") reference_epoch_ms = epoch_ms;
      std::vector<double> backups;  // hooks that took a backup (the others take microseconds)
      for (double ms : t.backup_ms) {
        if (freq != "none" && ms > 1.0) backups.push_back(ms);
      }
      const double backup_ms = median(backups);
      const double per_epoch = freq == "none"    ? 0.0
                               : freq == "epoch" ? backup_ms
                                                 : backup_ms * static_cast<double>(backups.size()) /
                                                       static_cast<double>(epochs);
      fmt::print(
          R"({{"model": "{}", "save_freq": "{}", "epoch_ms_median": {:.1f}, "backups": {}, )"
          R"("backup_ms_median": {:.1f}, "backup_ms_per_epoch": {:.1f}, "share_of_epoch_pct": {:.2f}, )"
          R"("epoch_ms_vs_reference_pct": {:.2f}}})"
          "\n",
          model_name, freq, epoch_ms, backups.size(), backup_ms, per_epoch,
          epoch_ms > 0 ? 100.0 * per_epoch / epoch_ms : 0.0,
          reference_epoch_ms > 0 ? 100.0 * (epoch_ms - reference_epoch_ms) / reference_epoch_ms
                                 : 0.0);
    }
    // Relaunch: the last run left its backups in dir (delete_checkpoint = false). Time from the
    // fit() call to the end of the first step, resumed against fresh.
    for (const bool resume : {false, true}) {
      os::Model m = build(model_name, seed);
      auto first = std::make_shared<FirstStep>();
      std::vector<os::train::CallbackPtr> cbs;
      if (resume) cbs.push_back(os::callbacks::BackupAndRestore(dir, {.save_freq = "100"}));
      cbs.push_back(first);
      const auto t0 = Clock::now();
      m.fit(x, y,
            {.batch_size = 128, .epochs = epochs, .verbose = 0, .callbacks = cbs, .seed = seed});
      fmt::print(R"({{"model": "{}", "first_step_after": "{}", "ms": {:.1f}}})"
                 "\n",
                 model_name, resume ? "relaunch, restoring the newest backup" : "a fresh fit",
                 std::chrono::duration<double, std::milli>(first->at - t0).count());
    }
    fs::remove_all(dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_backup: {}\n", e.what());
    return 1;
  }
  return 0;
}
