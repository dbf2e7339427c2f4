#include "osprey/tune/oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/io/json.h"
#include "osprey/io/posix_file.h"

namespace osprey::tune {

PrunerKind parse_pruner_kind(const std::string& name, const std::string& where) {
  if (name == "none") return PrunerKind::none;
  if (name == "median") return PrunerKind::median;
  OSPREY_THROW(ValueError, "{}: the pruner must be none or median. Received: '{}'", where, name);
}

const char* pruner_kind_name(PrunerKind kind) {
  return kind == PrunerKind::median ? "median" : "none";
}

Oracle::Oracle(OracleOptions options)
    : options_(std::move(options)), space_(options_.hyperparameters.copy_space()) {
  OSPREY_CHECK(options_.max_trials >= 0,
               "Oracle: max_trials must be >= 0 (0: no limit). Received: {}", options_.max_trials);
  seed_ = options_.seed ? *options_.seed : next_seed();
  const PrunerOptions& p = options_.pruner;
  OSPREY_CHECK(p.min_trials >= 1, "Oracle: pruner min_trials must be >= 1. Received: {}",
               p.min_trials);
  OSPREY_CHECK(p.warmup_epochs >= 0, "Oracle: pruner warmup_epochs must be >= 0. Received: {}",
               p.warmup_epochs);
}

void Oracle::set_directory(std::filesystem::path project_dir) {
  dir_ = std::move(project_dir);
  std::filesystem::create_directories(dir_);
}

std::filesystem::path Oracle::trial_dir(const std::string& trial_id) const {
  return dir_ / ("trial_" + trial_id);
}

void Oracle::update_space(const HyperParameters& hp) { space_.merge_space(hp); }

double Oracle::next_uniform() {
  const auto w =
      Philox(seed_)(counter_++, 0x7475'6e65ull);  // "tune": a stream apart from the weights'
  return Philox::to_unit_double(w[0], w[1]);
}

HyperParameters Oracle::random_values() {
  HyperParameters hp = space_.copy_space();
  for (const HyperParameter& h : space_.space()) {
    if (!hp.is_active(h)) continue;
    hp.set(h.name, h.tunable() ? h.from_unit(next_uniform()) : h.default_value);
  }
  return hp;
}

std::optional<HyperParameters> Oracle::random_unseen_values(int tries) {
  for (int i = 0; i < tries; ++i) {
    HyperParameters hp = random_values();
    if (!seen(hp)) return hp;
  }
  return std::nullopt;
}

std::string Oracle::values_key(const HyperParameters& hp) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : hp.values()) {
    if (!k.starts_with(kTunerValuePrefix)) j[k] = to_json(v);
  }
  return j.dump();
}

std::vector<const Trial*> Oracle::completed_trials() const {
  std::vector<const Trial*> out;
  for (const Trial& t : trials_) {
    if (t.status == TrialStatus::completed && t.score) out.push_back(&t);
  }
  return out;
}

Trial* Oracle::find_trial(const std::string& trial_id) {
  for (Trial& t : trials_) {
    if (t.trial_id == trial_id) return &t;
  }
  return nullptr;
}

const Trial& Oracle::get_trial(const std::string& trial_id) const {
  for (const Trial& t : trials_) {
    if (t.trial_id == trial_id) return t;
  }
  OSPREY_THROW(ValueError, "{}: no trial '{}' ({} trials)", class_name(), trial_id, trials_.size());
}

Trial Oracle::create_trial(const std::string& tuner_id) {
  if (!retry_.empty()) {
    Trial* t = find_trial(retry_.front());
    retry_.pop_front();
    OSPREY_ASSERT(t != nullptr, "retry queue names an unknown trial");
    // Its records stay: the tuner resumes each execution from its backup, and epochs it trains
    // again replace theirs (update_trial).
    t->status = TrialStatus::running;
    t->metrics.clear();
    t->score.reset();
    t->best_step = -1;
    t->message.clear();
    save_trial(*t);
    return *t;
  }
  Trial t;
  if (options_.max_trials > 0 && static_cast<int>(trials_.size()) >= options_.max_trials) {
    t.status = TrialStatus::stopped;
    return t;
  }
  // One past the largest id so far, so ids stay unique after a damaged trial was dropped by hand.
  size_t next_id = trials_.size();
  for (const Trial& e : trials_) {
    size_t n = 0;
    const char* end = e.trial_id.data() + e.trial_id.size();
    const auto [ptr, ec] = std::from_chars(e.trial_id.data(), end, n);
    if (ec == std::errc() && ptr == end) next_id = std::max(next_id, n + 1);
  }
  t.trial_id = fmt::format("{:04d}", next_id);
  Proposal p = populate_space(t.trial_id);
  if (p.status != TrialStatus::running) {
    t.status = p.status;
    t.trial_id.clear();
    return t;
  }
  t.hyperparameters = std::move(p.values);
  t.status = TrialStatus::running;
  seen_.insert(values_key(t.hyperparameters));
  trials_.push_back(t);
  save_trial(t);
  save_oracle();
  return t;
}

TrialStatus Oracle::update_trial(const std::string& trial_id, const MetricValues& metrics,
                                 int epoch, int execution) {
  Trial* t = find_trial(trial_id);
  OSPREY_CHECK(t != nullptr, "{}: update_trial: no trial '{}'", class_name(), trial_id);
  OSPREY_CHECK(t->status == TrialStatus::running, "{}: update_trial: trial '{}' is {}, not running",
               class_name(), trial_id, status_name(t->status));
  OSPREY_CHECK(execution >= 0, "{}: update_trial: execution must be >= 0", class_name());
  if (static_cast<int>(t->executions.size()) <= execution) t->executions.resize(execution + 1);
  auto& records = t->executions[execution];
  std::erase_if(records, [&](const EpochRecord& r) { return r.epoch >= epoch; });
  records.push_back({epoch, metrics});
  std::optional<std::string> pruned = prune(*t, execution, epoch);
  if (pruned) t->message = *pruned;
  save_trial(*t);
  return pruned ? TrialStatus::stopped : TrialStatus::running;
}

std::optional<std::string> Oracle::prune(const Trial& t, int execution, int epoch) const {
  const PrunerOptions& p = options_.pruner;
  if (p.kind == PrunerKind::none || epoch < p.warmup_epochs) return std::nullopt;
  const Objective& obj = options_.objective;
  // The best finite objective value of `records` up to `epoch`; nullopt without one or when the
  // records do not reach `epoch`.
  auto best_up_to = [&](const std::vector<EpochRecord>& records) -> std::optional<double> {
    std::optional<double> best;
    bool reached = false;
    for (const EpochRecord& r : records) {
      if (r.epoch > epoch) continue;
      reached = reached || r.epoch == epoch;
      for (const auto& [k, v] : r.metrics) {
        if (k == obj.name() && std::isfinite(v) && (!best || obj.better(v, *best))) best = v;
      }
    }
    return reached ? best : std::nullopt;
  };
  const auto mine = best_up_to(t.executions[execution]);
  if (!mine) return std::nullopt;
  std::vector<double> others;
  for (const Trial& o : trials_) {
    if (o.trial_id == t.trial_id || o.status == TrialStatus::failed ||
        o.status == TrialStatus::invalid) {
      continue;
    }
    for (const auto& e : o.executions) {
      if (const auto b = best_up_to(e)) others.push_back(*b);
    }
  }
  if (static_cast<int>(others.size()) < p.min_trials) return std::nullopt;
  std::sort(others.begin(), others.end());
  const size_t n = others.size();
  const double median = n % 2 == 1 ? others[n / 2] : 0.5 * (others[n / 2 - 1] + others[n / 2]);
  if (!obj.better(median, *mine)) return std::nullopt;
  return fmt::format(
      "pruned after epoch {}: its best {} so far, {:.6g}, is worse than the median {:.6g} of {} "
      "other runs at that epoch (median pruner)",
      epoch + 1, obj.name(), *mine, median, n);
}

void Oracle::requeue_trial(const std::string& trial_id) {
  Trial* t = find_trial(trial_id);
  OSPREY_CHECK(t != nullptr, "{}: requeue_trial: no trial '{}'", class_name(), trial_id);
  OSPREY_CHECK(t->status == TrialStatus::running,
               "{}: requeue_trial: trial '{}' is {}, not running", class_name(), trial_id,
               status_name(t->status));
  if (std::find(retry_.begin(), retry_.end(), trial_id) == retry_.end())
    retry_.push_front(trial_id);
}

std::vector<std::string> Oracle::take_requeued() {
  std::vector<std::string> out(retry_.begin(), retry_.end());
  retry_.clear();
  return out;
}

Trial Oracle::end_trial(const std::string& trial_id, TrialStatus status,
                        const std::string& message) {
  Trial* t = find_trial(trial_id);
  OSPREY_CHECK(t != nullptr, "{}: end_trial: no trial '{}'", class_name(), trial_id);
  OSPREY_CHECK(status == TrialStatus::completed || status == TrialStatus::failed ||
                   status == TrialStatus::invalid,
               "{}: end_trial('{}'): status must be completed, failed or invalid, not {}",
               class_name(), trial_id, status_name(status));
  t->status = status;
  // A pruned trial keeps the pruner's note unless the tuner says more.
  if (!message.empty() || status != TrialStatus::completed) t->message = message;
  if (status == TrialStatus::completed && !t->compute_score(options_.objective)) {
    std::set<std::string> keys;
    for (const auto& e : t->executions) {
      for (const auto& r : e) {
        for (const auto& [k, v] : r.metrics) keys.insert(k);
      }
    }
    t->status = TrialStatus::failed;
    t->message =
        keys.count(options_.objective.name()) > 0
            ? fmt::format("objective '{}' was never finite (NaN or infinite in every epoch)",
                          options_.objective.name())
            : fmt::format(
                  "objective '{}' is not in the epoch logs (they hold: {}); pass validation data "
                  "for val_ metrics",
                  options_.objective.name(), fmt::join(keys, ", "));
  }
  save_trial(*t);
  save_oracle();
  return *t;
}

std::vector<Trial> Oracle::get_best_trials(int n) const {
  std::vector<const Trial*> done = completed_trials();
  std::stable_sort(done.begin(), done.end(), [&](const Trial* a, const Trial* b) {
    return options_.objective.better(*a->score, *b->score);
  });
  std::vector<Trial> out;
  for (size_t i = 0; i < done.size() && static_cast<int>(i) < n; ++i) out.push_back(*done[i]);
  return out;
}

int Oracle::consecutive_failures() const {
  int n = 0;
  for (auto it = trials_.rbegin(); it != trials_.rend(); ++it) {
    if (it->status == TrialStatus::failed)
      ++n;
    else if (it->status == TrialStatus::completed)
      break;
  }
  return n;
}

nlohmann::json Oracle::get_state(bool with_trials) const {
  nlohmann::json ids = nlohmann::json::array();
  for (const Trial& t : trials_) ids.push_back(t.trial_id);
  nlohmann::json state = {{"class_name", class_name()},
                          {"objective", options_.objective.to_json()},
                          {"max_trials", options_.max_trials},
                          {"seed", seed_},
                          {"random_counter", counter_},
                          {"hyperparameters", space_.to_json()},
                          {"trial_ids", ids},
                          {"algorithm", algorithm_state()}};
  if (with_trials) {
    nlohmann::json ts = nlohmann::json::array();
    for (const Trial& t : trials_) ts.push_back(t.to_json());
    state["trials"] = ts;
  }
  return state;
}

namespace {
// A trial's file as the study reloads it. Written atomically, so only damage from outside breaks
// it; the error says how to go on.
Trial read_trial_file(const std::filesystem::path& dir, const std::string& trial_id) {
  const std::filesystem::path path = dir / "trial.json";
  io::detail::remove_stale_temporaries(path);  // what a write killed half-way left
  std::string damage;
  try {
    OSPREY_CHECK_T(IoError, std::filesystem::exists(path), "{} does not exist", path.string());
    return Trial::from_json(io::read_json_file(path), path.string());
  } catch (const Error& e) {
    damage = e.what();
  } catch (const nlohmann::json::exception& e) {
    damage = fmt::format("{}: malformed trial: {}", path.string(), io::json_exception_message(e));
  }
  OSPREY_THROW(IoError,
               "{}; the study cannot resume with trial {} as it is: repair the file, delete {} to "
               "drop the trial (the search runs another in its place), or start the study over "
               "with overwrite=true (osprey tune --overwrite)",
               damage, trial_id, dir.string());
}
}  // namespace

void Oracle::set_state(const nlohmann::json& state) {
  const std::string where =
      dir_.empty() ? std::string("oracle state") : (dir_ / "oracle.json").string();
  try {
    const std::string cls = state.at("class_name").get<std::string>();
    OSPREY_CHECK_T(IoError, cls == class_name(),
                   "{}: holds a {} search, not {}; use another project_name or overwrite=true",
                   where, cls, class_name());
    const Objective saved = Objective::from_json(state.at("objective"));
    OSPREY_CHECK_T(
        IoError,
        saved.name() == options_.objective.name() &&
            saved.direction() == options_.objective.direction(),
        "{}: the search optimized {} ({}), this one asks for {} ({}); use another project_name or "
        "overwrite=true",
        where, saved.name(), saved.direction(), options_.objective.name(),
        options_.objective.direction());
    // The seed, the counter and the algorithms' state are integers; a float where one is read
    // would be converted with a plain cast (undefined past the range), so none may be large.
    io::check_float_magnitudes(state.at("algorithm"), io::kIntFieldBound, where + ": algorithm");
    for (const char* key : {"seed", "random_counter"}) {
      OSPREY_CHECK_T(IoError, state.at(key).is_number_unsigned(),
                     "{}: {} must be a non-negative integer, got {}", where, key,
                     state.at(key).dump());
    }
    seed_ = state.at("seed").get<uint64_t>();
    counter_ = state.at("random_counter").get<uint64_t>();
    space_ = HyperParameters::from_json(state.at("hyperparameters"), where);
    space_.merge_space(options_.hyperparameters);
    trials_.clear();
    retry_.clear();
    seen_.clear();
    if (state.contains("trials")) {
      for (const auto& tj : state.at("trials")) trials_.push_back(Trial::from_json(tj, where));
    } else {
      for (const auto& id : state.at("trial_ids")) {
        const std::string trial_id = id.get<std::string>();
        check_trial_id(trial_id, where);
        const std::filesystem::path dir = trial_dir(trial_id);
        if (!std::filesystem::exists(dir)) {
          // Deleted by hand, the way the error below offers to drop a damaged trial.
          fmt::print(stderr,
                     "{}: trial {} was deleted ({} is gone); the search goes on without it\n",
                     where, trial_id, dir.string());
          continue;
        }
        trials_.push_back(read_trial_file(dir, trial_id));
      }
    }
    for (const Trial& t : trials_) {
      seen_.insert(values_key(t.hyperparameters));
      if (t.status == TrialStatus::running) retry_.push_back(t.trial_id);
    }
    set_algorithm_state(state.at("algorithm"));
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(IoError, "{}: malformed oracle state: {}", where, e.what());
  }
}

bool Oracle::reload() {
  OSPREY_CHECK(!dir_.empty(), "{}: reload() needs a directory (set_directory)", class_name());
  const auto path = dir_ / "oracle.json";
  // A write killed half-way leaves its temporary; a finished study that never writes the file
  // again would keep it for good.
  io::detail::remove_stale_temporaries(path);
  if (!std::filesystem::exists(path)) return false;
  nlohmann::json state;
  try {
    state = io::read_json_file(path);
  } catch (const IoError& e) {
    // Written atomically, so only damage from outside truncates it: say how to go on.
    OSPREY_THROW(IoError,
                 "{}; the study cannot resume from it: repair the file, or start the study over "
                 "with overwrite=true (osprey tune --overwrite)",
                 e.what());
  }
  set_state(state);
  return true;
}

void Oracle::save_trial(const Trial& t) const {
  if (dir_.empty()) return;
  const auto d = trial_dir(t.trial_id);
  std::filesystem::create_directories(d);
  io::write_json_file(d / "trial.json", t.to_json());
}

void Oracle::save_oracle() const {
  if (dir_.empty()) return;
  io::write_json_file(dir_ / "oracle.json", get_state(/*with_trials=*/false));
}

}  // namespace osprey::tune
