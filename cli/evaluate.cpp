// `osprey evaluate DIR [--data D]`: loads a model saved by `osprey train` (or Model::save) and
// prints its loss and metrics on the Fashion-MNIST test split.
// `osprey evaluate --watch DIR`: the side-car evaluator (the evaluator task of a cluster spec,
// tf.keras's SidecarEvaluator): evaluates each checkpoint that appears in DIR (DIR itself or its
// sub-folders holding a saved model: ModelCheckpoint's epoch folders, BackupAndRestore's ckpt-N),
// and a checkpoint rewritten in place again, one line per evaluation. It only reads: saves are
// atomic folder swaps, so it never sees half a checkpoint, and training never waits for it. A
// checkpoint removed while it is read (a backup pruned) is skipped with a note.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "cli/saved_model_command.h"
#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/core/error.h"
#include "osprey/data/fashion_mnist.h"

namespace osprey::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct WatchArgs {
  std::string dir, data;
  bool watch = false;
  int max_evaluations = 0;    // 0: no limit
  double idle_timeout = 0.0;  // seconds without a new checkpoint before stopping; 0: never
  double poll = 1.0;          // seconds between looks at DIR
};

// The saved models in dir (dir itself, then its sub-folders, by name) with their weights' time:
// a folder counts once its model.safetensors exists; staging folders ("x.tmp-...") do not.
std::vector<std::pair<fs::path, fs::file_time_type>> checkpoints(const fs::path& dir) {
  std::vector<std::pair<fs::path, fs::file_time_type>> out;
  std::error_code ec;
  auto consider = [&](const fs::path& p) {
    const std::string name = p.filename().string();
    if (name.find(".tmp-") != std::string::npos || name.find(".old-") != std::string::npos) return;
    const fs::file_time_type t = fs::last_write_time(p / "model.safetensors", ec);
    if (!ec && fs::exists(p / "config.json", ec)) out.emplace_back(p, t);
  };
  consider(dir);
  std::vector<fs::path> subs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) subs.push_back(it->path());
  }
  std::sort(subs.begin(), subs.end());
  for (const fs::path& p : subs) consider(p);
  return out;
}

void watch(const WatchArgs& a) {
  // A folder that does not exist yet is waited for: the evaluator is usually started beside the
  // training that creates it (docs/fault_tolerance.md). A file in its place is a mistake.
  const bool exists = fs::exists(a.dir);
  OSPREY_CHECK_T(IoError, !exists || fs::is_directory(a.dir),
                 "osprey evaluate --watch: {} is not a folder", a.dir);
  const data::LabeledArrays test = datasets::fashion_mnist::load({.directory = a.data}).test;
  fmt::print("watching {} for checkpoints (every {} s){}\n", a.dir, a.poll,
             exists ? "" : "; it does not exist yet, waiting for it to appear");
  std::fflush(stdout);
  std::map<fs::path, fs::file_time_type> seen;
  int evaluations = 0;
  auto last_new = Clock::now();
  while (a.max_evaluations == 0 || evaluations < a.max_evaluations) {
    bool found = false;
    for (const auto& [path, time] : checkpoints(a.dir)) {
      const auto it = seen.find(path);
      if (it != seen.end() && it->second == time) continue;
      seen[path] = time;
      found = true;
      try {
        Model model = load_model(path.string());
        const train::Logs logs = model.evaluate(test.x, test.y, {.batch_size = 256});
        fmt::print("{}: test{}\n", path.string(), logs.format());
        ++evaluations;
      } catch (const IoError& e) {  // removed or replaced while read: the next look sees it
        fmt::print("{}: skipped, it changed while being read ({})\n", path.string(), e.what());
        seen.erase(path);
      }
      std::fflush(stdout);
      if (a.max_evaluations != 0 && evaluations >= a.max_evaluations) return;
    }
    if (found) last_new = Clock::now();
    if (a.idle_timeout > 0 &&
        std::chrono::duration<double>(Clock::now() - last_new).count() >= a.idle_timeout) {
      fmt::print("no new checkpoint in {} s; {} evaluated\n", a.idle_timeout, evaluations);
      return;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(a.poll));
  }
}

}  // namespace

void add_evaluate(CLI::App& app) {
  auto args = std::make_shared<WatchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate",
      "Evaluate a saved model on the Fashion-MNIST test split (--watch: each checkpoint as it "
      "appears in a folder)");
  cmd->add_option("dir", args->dir,
                  "A directory written by osprey train / Model::save (--watch: a folder that "
                  "receives checkpoints)")
      ->required();
  add_data_option(*cmd, args->data);
  cmd->add_flag("--watch", args->watch,
                "Side-car evaluator: evaluate every checkpoint that appears in DIR");
  cmd->add_option("--max-evaluations", args->max_evaluations,
                  "--watch: stop after N evaluations (default: no limit)")
      ->check(kNonNegative);
  cmd->add_option("--idle-timeout", args->idle_timeout,
                  "--watch: stop after this many seconds without a new checkpoint (default: never)")
      ->check(kNonNegative);
  cmd->add_option("--poll", args->poll, "--watch: seconds between looks at DIR")->check(kPositive);
  cmd->callback([args] {
    if (args->watch) {
      watch(*args);
      return;
    }
    OSPREY_CHECK_T(cli::UsageError, args->max_evaluations == 0 && args->idle_timeout == 0,
                   "osprey evaluate: --max-evaluations and --idle-timeout need --watch");
    Model model = load_model(args->dir);  // first: a bad DIR fails before the data are read
    const auto test = datasets::fashion_mnist::load({.directory = args->data}).test;
    const train::Logs logs = model.evaluate(test.x, test.y, {.batch_size = 256});
    fmt::print("{}: test{}\n", args->dir, logs.format());
  });
}

}  // namespace osprey::cli
