#include "osprey/train/callbacks/backup_and_restore.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/io/atomic_directory.h"
#include "osprey/io/crc32c.h"
#include "osprey/io/json.h"
#include "osprey/io/posix_file.h"
#include "osprey/models/saving.h"
#include "osprey/nn/seed_states.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::train {

namespace {

namespace fs = std::filesystem;

constexpr const char* kStateFile = "training_state.json";
constexpr const char* kFormat = "osprey.backup";
constexpr int kFormatVersion = 1;
constexpr size_t kKeep = 2;  // backups kept: the newest and the one to fall back to
constexpr std::string_view kPrefix = "ckpt-";

// The global step of a backup folder name "ckpt-<digits>", or -1 for anything else (staging
// folders "ckpt-N.tmp-...", other files).
int64_t backup_step(const std::string& name) {
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  int64_t step = -1;
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, step);
  return ec == std::errc() && end == last && step >= 0 ? step : -1;
}

std::string crc_of(const nlohmann::json& state) {
  return fmt::format("{:08x}", io::crc32c(state.dump()));
}

void warn(const std::string& message) { fmt::print(stderr, "osprey: warning: {}\n", message); }

}  // namespace

BackupAndRestore::BackupAndRestore(fs::path backup_dir, BackupAndRestoreOptions options)
    : dir_(std::move(backup_dir)), options_(std::move(options)) {
  OSPREY_CHECK(!dir_.empty(), "BackupAndRestore: the backup directory is empty");
  if (options_.save_freq != "epoch") {
    int64_t n = 0;
    const std::string& f = options_.save_freq;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
    OSPREY_CHECK(ec == std::errc() && end == f.data() + f.size() && n > 0,
                 "BackupAndRestore: save_freq must be \"epoch\" or a positive number of steps. "
                 "Received: \"{}\"",
                 f);
    save_steps_ = n;
  }
}

std::vector<fs::path> BackupAndRestore::list_backups(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t step = backup_step(it->path().filename().string());
    if (step >= 0 && it->is_directory(ec)) found.emplace_back(step, it->path());
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

void BackupAndRestore::on_train_begin(const Logs&) {
  epoch_ = 0;
  global_step_ = epoch_start_step_ = resumed_step_ = 0;
  history_.clear();
  history_epochs_.clear();
  restored_from_.reset();
  warnings_.clear();
  // A job about to run for hours learns now, not at its first backup, that it cannot write here.
  if (model().trainer().strategy().is_chief()) io::check_directory_destination(dir_ / "ckpt-0");
  const std::vector<fs::path> backups = list_backups(dir_);
  std::vector<std::string> failures;
  for (size_t i = 0; i < backups.size() && !restored_from_; ++i) {
    try {
      try_restore(backups[i]);
    } catch (const IoError& e) {
      failures.emplace_back(e.what());
      const std::string message =
          fmt::format("BackupAndRestore: {}; {}", e.what(),
                      i + 1 < backups.size()
                          ? fmt::format("restoring the previous backup {}", backups[i + 1].string())
                          : std::string("no older backup to restore"));
      warnings_.push_back(message);
      warn(message);
    }
  }
  OSPREY_CHECK_T(IoError, backups.empty() || restored_from_.has_value(),
                 "BackupAndRestore: none of the {} backups in {} could be restored (nothing was "
                 "trained; remove the folder to start afresh): {}",
                 backups.size(), dir_.string(), fmt::join(failures, "; "));
  last_backup_step_ = global_step_;
}

void BackupAndRestore::try_restore(const fs::path& backup) {
  const fs::path state_path = backup / kStateFile;
  const io::JsonDocument doc = io::JsonDocument::read(state_path);
  const io::JsonView root = doc.root();
  OSPREY_CHECK_T(IoError, root.get<std::string>("format") == kFormat,
                 "{}: field \"format\" is \"{}\", not \"{}\"", state_path.string(),
                 root.get<std::string>("format"), kFormat);
  const int version = root.get<int>("format_version");
  OSPREY_CHECK_T(IoError, version == kFormatVersion,
                 "{}: format_version {} is not one this osprey reads ({})", state_path.string(),
                 version, kFormatVersion);
  const std::string stored = root.get<std::string>("crc32c");
  const std::string actual = crc_of(root["state"].json());
  OSPREY_CHECK_T(IoError, stored == actual,
                 "{}: checksum mismatch: the state hashes to {}, the file says {} (the file is "
                 "damaged)",
                 state_path.string(), actual, stored);
  const io::JsonView s = root["state"];
  // A relaunch with another batch size or data would silently train on other batches.
  const auto saved_steps = s.get<int64_t>("steps_per_epoch");
  if (saved_steps >= 0 && params().steps >= 0 && saved_steps != params().steps) {
    OSPREY_THROW(ValueError,
                 "BackupAndRestore: {} was taken with {} steps per epoch; this fit has {}. Resume "
                 "with the same data and global batch size (or remove {} to start afresh)",
                 backup.string(), saved_steps, params().steps, dir_.string());
  }
  // Everything the state says is read and checked before anything is loaded: a state that does
  // not fit this fit (a hand-edited file, another program's backup) leaves the model untouched.
  ResumePoint point;
  point.epoch = s.get<int>("epoch");
  point.step = s.get<int64_t>("step");
  point.running_state = s.get<std::vector<double>>("running_state");
  for (const auto& [key, values] : s["history"].items()) {
    point.history[key] = values.as<std::vector<double>>();
  }
  point.history_epochs = s.get<std::vector<int>>("history_epochs");
  const auto global_step = s.get<int64_t>("global_step");
  const io::JsonView g = s["global_seed"];
  const GlobalSeedState seed{g.get<uint64_t>("seed"), g.get<uint64_t>("counter")};
  nn::SeedStates seeds;
  for (const io::JsonView& e : s["layer_seeds"].elements()) {
    seeds.emplace_back(e.get<std::string>("path"), e.get<uint64_t>("calls"));
  }
  const int64_t steps = saved_steps >= 0 ? saved_steps : params().steps;
  // global_step counts on from here: far below the int64 limit, so that counting cannot overflow.
  OSPREY_CHECK(point.epoch >= 0 && point.step >= 0 && global_step >= point.step &&
                   global_step <= (int64_t{1} << 62) && (steps < 0 || point.step <= steps),
               "BackupAndRestore: {}: the position (epoch {}, step {}, global step {}) is not one "
               "a fit of {} steps per epoch reaches",
               state_path.string(), point.epoch, point.step, global_step, steps);
  for (const auto& [key, values] : point.history) {
    OSPREY_CHECK(values.size() == point.history_epochs.size(),
                 "BackupAndRestore: {}: history \"{}\" holds {} values for {} epochs",
                 state_path.string(), key, values.size(), point.history_epochs.size());
  }
  try {
    if (point.step > 0) model().trainer().check_running_state(point.running_state);
    nn::set_seed_states(model().network(), seeds);  // throws, naming the layer, for another model's
  } catch (const ValueError& e) {
    OSPREY_THROW(ValueError, "BackupAndRestore: {}: {}", state_path.string(), e.what());
  }

  // Weights and optimizer state first: their files carry checksums, verified before anything is
  // copied, and they are the likeliest to be damaged.
  model().load_weights(backup.string());
  model().load_optimizer_state(backup.string());
  set_global_seed_state(seed);
  history_ = point.history;
  history_epochs_ = point.history_epochs;
  global_step_ = global_step;
  resumed_step_ = point.step;
  model().trainer().resume_at(std::move(point));
  restored_from_ = backup;
}

void BackupAndRestore::on_epoch_begin(int epoch, const Logs&) {
  epoch_ = epoch;
  epoch_start_step_ = global_step_ - resumed_step_;
  resumed_step_ = 0;
}

void BackupAndRestore::on_train_batch_end(int64_t batch, const Logs&) {
  global_step_ = epoch_start_step_ + batch + 1;
  if (save_steps_ > 0 && global_step_ / save_steps_ > last_backup_step_ / save_steps_) {
    backup(epoch_, batch + 1);
  }
}

void BackupAndRestore::on_epoch_end(int epoch, const Logs& logs) {
  history_epochs_.push_back(epoch);
  for (const auto& [k, v] : logs.items()) history_[k].push_back(v);
  if (save_steps_ == 0) backup(epoch + 1, 0);
}

void BackupAndRestore::backup(int epoch, int64_t step) {
  Trainer& trainer = model().trainer();
  const GlobalSeedState g = global_seed_state();
  nlohmann::json seeds = nlohmann::json::array();
  for (const auto& [path, calls] : nn::seed_states(model().network())) {
    seeds.push_back({{"path", path}, {"calls", calls}});
  }
  const nlohmann::json state = {
      {"epoch", epoch},
      {"step", step},
      {"global_step", global_step_},
      {"steps_per_epoch", params().steps},
      {"global_seed", {{"seed", g.seed}, {"counter", g.counter}}},
      {"layer_seeds", seeds},
      {"running_state", step > 0 ? trainer.running_state() : std::vector<double>{}},
      {"history", history_},
      {"history_epochs", history_epochs_},
      {"num_workers", trainer.strategy().num_workers()},
      {"num_replicas", trainer.strategy().num_replicas_in_sync()}};
  models::SaveExtras extra;
  extra.json_files.emplace_back(kStateFile, nlohmann::json{{"format", kFormat},
                                                           {"format_version", kFormatVersion},
                                                           {"state", state},
                                                           {"crc32c", crc_of(state)}});
  model().save((dir_ / fmt::format("{}{:012d}", kPrefix, global_step_)).string(), extra);
  last_backup_step_ = global_step_;
  if (!trainer.strategy().is_chief()) return;
  // Keep the newest two; drop staging folders of backups killed half-way.
  const std::vector<fs::path> backups = list_backups(dir_);
  std::error_code ec;
  for (size_t i = kKeep; i < backups.size(); ++i) fs::remove_all(backups[i], ec);
  std::set<std::string> staged;  // "ckpt-N" of each "ckpt-N.tmp-<pid>-XXXXXX"
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t tmp = name.find(".tmp-");
    if (tmp != std::string::npos && backup_step(name.substr(0, tmp)) >= 0) {
      staged.insert(name.substr(0, tmp));
    }
  }
  for (const std::string& name : staged) io::detail::remove_stale_temporaries(dir_ / name);
}

void BackupAndRestore::on_train_end(const Logs&) {
  if (!options_.delete_checkpoint || !model().trainer().strategy().is_chief()) return;
  std::error_code ec;
  for (const fs::path& b : list_backups(dir_)) fs::remove_all(b, ec);
  fs::remove(dir_, ec);  // only when nothing else is in it
}

}  // namespace osprey::train
