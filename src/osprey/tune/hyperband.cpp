#include "osprey/tune/hyperband.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "osprey/core/error.h"
#include "osprey/tune/builtin_tuners.h"

namespace osprey::tune {

std::vector<HyperbandBracket> hyperband_schedule(int max_epochs, int factor) {
  OSPREY_CHECK(max_epochs >= 1, "Hyperband: max_epochs must be >= 1. Received: {}", max_epochs);
  OSPREY_CHECK(factor >= 2, "Hyperband: factor must be >= 2. Received: {}", factor);
  // s_max = floor(log_factor(max_epochs)), in integers so 81 = 3^4 gives exactly 4.
  int s_max = 0;
  for (int64_t p = factor; p <= max_epochs; p *= factor) ++s_max;
  std::vector<HyperbandBracket> out;
  for (int s = s_max; s >= 0; --s) {
    int64_t pow_s = 1;
    for (int i = 0; i < s; ++i) pow_s *= factor;
    const int64_t n =
        ((s_max + 1) * pow_s + s) / (s + 1);  // ceil((s_max + 1) * factor^s / (s + 1))
    HyperbandBracket b{s, {}};
    int64_t pow_i = 1;
    for (int i = 0; i <= s; ++i) {
      // r_i = max_epochs * factor^(i - s), rounded up so the last rung is max_epochs exactly.
      int64_t div = 1;
      for (int k = 0; k < s - i; ++k) div *= factor;
      const int64_t epochs = (max_epochs + div - 1) / div;
      b.rungs.push_back({static_cast<int>(n / pow_i), static_cast<int>(epochs)});
      pow_i *= factor;
    }
    out.push_back(std::move(b));
  }
  return out;
}

int64_t hyperband_epoch_budget(const std::vector<HyperbandBracket>& schedule) {
  int64_t total = 0;
  for (const auto& b : schedule) {
    int prev = 0;
    for (const auto& r : b.rungs) {
      total += static_cast<int64_t>(r.num_trials) * (r.epochs - prev);
      prev = r.epochs;
    }
  }
  return total;
}

HyperbandSampler parse_hyperband_sampler(const std::string& name, const std::string& where) {
  if (name == "random") return HyperbandSampler::random;
  if (name == "bayesian") return HyperbandSampler::bayesian;
  OSPREY_THROW(ValueError, "{}: the sampler must be random or bayesian. Received: '{}'", where,
               name);
}

const char* hyperband_sampler_name(HyperbandSampler sampler) {
  return sampler == HyperbandSampler::bayesian ? "bayesian" : "random";
}

HyperbandOracle::HyperbandOracle(OracleOptions options, HyperbandOracleOptions hb)
    : Oracle(std::move(options)), hb_(hb), schedule_(hyperband_schedule(hb.max_epochs, hb.factor)) {
  OSPREY_CHECK(hb_.hyperband_iterations >= 1,
               "Hyperband: hyperband_iterations must be >= 1. Received: {}",
               hb_.hyperband_iterations);
  OSPREY_CHECK(hb_.random_fraction >= 0 && hb_.random_fraction <= 1,
               "Hyperband: random_fraction must be in [0, 1]. Received: {}", hb_.random_fraction);
  check_bayesian_options(hb_.bayesian, "Hyperband");
}

HyperParameters HyperbandOracle::new_configuration() {
  auto random = [&] {
    auto fresh = random_unseen_values();
    return fresh ? std::move(*fresh)
                 : random_values();  // a small space may repeat values across brackets
  };
  if (hb_.sampler != HyperbandSampler::bayesian || next_uniform() < hb_.random_fraction)
    return random();
  GaussianProcessSampler gp(space_, hb_.bayesian);
  if (gp.dimensions() == 0) return random();
  const size_t needed = hb_.bayesian.num_initial_points > 0
                            ? static_cast<size_t>(hb_.bayesian.num_initial_points)
                            : gp.dimensions() + 1;
  const auto done = completed_trials();
  if (done.size() < needed) return random();
  // One GP over every rung, the budget an input (log epochs, 1 at max_epochs), asked about
  // max_epochs: low rungs are many and cheap, high rungs say what they predict.
  const double sign = objective().maximize() ? -1.0 : 1.0;
  const double log_max = std::log(static_cast<double>(std::max(hb_.max_epochs, 2)));
  auto budget_of = [&](int64_t epochs) {
    return std::vector<double>{std::log(static_cast<double>(epochs)) / log_max};
  };
  auto budget = [&](const Trial& t) {
    return budget_of(t.hyperparameters.get(kTunerEpochs).as_int());
  };
  for (const Trial* t : done) gp.observe(t->hyperparameters, sign * *t->score, budget(*t));
  // Every running bracket's current round: with parallel workers their unscored trials are the
  // ones the new configuration should stay away from.
  for (const ActiveBracket& b : active_) {
    for (const std::string& id : b.round_trials) {
      const Trial& t = get_trial(id);
      if (!(t.status == TrialStatus::completed && t.score)) gp.pend(t.hyperparameters, budget(t));
    }
  }
  auto values = gp.propose([this] { return next_uniform(); },
                           [this](const HyperParameters& hp) { return !seen(hp); },
                           budget_of(hb_.max_epochs));
  return values ? std::move(*values) : random();
}

bool HyperbandOracle::done(const ActiveBracket& b) const {
  return b.round >= static_cast<int>(schedule_[b.bracket].rungs.size());
}

std::optional<HyperParameters> HyperbandOracle::next_in(ActiveBracket& b) {
  const HyperbandBracket& bracket = schedule_[b.bracket];
  while (!done(b)) {
    const HyperbandRung& rung = bracket.rungs[b.round];
    const size_t wanted = b.round == 0 ? static_cast<size_t>(rung.num_trials)
                                       : std::min<size_t>(rung.num_trials, b.promote.size());
    if (b.round_trials.size() < wanted) {
      HyperParameters hp;
      if (b.round == 0) {
        hp = new_configuration();
        hp.set(kTunerInitialEpoch, int64_t{0});
      } else {
        const std::string& parent = b.promote[b.round_trials.size()];
        hp = get_trial(parent).hyperparameters;
        hp.set(kTunerTrialId, parent);
        hp.set(kTunerInitialEpoch, int64_t{bracket.rungs[b.round - 1].epochs});
      }
      hp.set(kTunerEpochs, int64_t{rung.epochs});
      hp.set(kTunerBracket, int64_t{bracket.s});
      hp.set(kTunerRound, int64_t{b.round});
      return hp;
    }
    // Successive halving ranks the whole rung: no promotion while one of its trials runs.
    for (const std::string& id : b.round_trials) {
      if (!get_trial(id).ended()) return std::nullopt;
    }
    // The round is over: promote its best 1/factor into the next rung, or end the bracket.
    std::vector<const Trial*> scored;
    for (const std::string& id : b.round_trials) {
      const Trial& t = get_trial(id);
      if (t.status == TrialStatus::completed && t.score) scored.push_back(&t);
    }
    std::stable_sort(scored.begin(), scored.end(), [&](const Trial* x, const Trial* y) {
      return objective().better(*x->score, *y->score);
    });
    b.promote.clear();
    for (const Trial* t : scored) b.promote.push_back(t->trial_id);
    b.round_trials.clear();
    ++b.round;
    if (b.promote.empty()) b.round = static_cast<int>(bracket.rungs.size());
  }
  b.promote.clear();
  return std::nullopt;
}

Oracle::Proposal HyperbandOracle::populate_space(const std::string& trial_id) {
  // The oldest bracket first, so promotions go ahead of new configurations and one worker
  // runs the brackets in order, one at a time.
  for (size_t i = 0; i < active_.size();) {
    if (auto hp = next_in(active_[i])) {
      active_[i].round_trials.push_back(trial_id);
      return {TrialStatus::running, std::move(*hp)};
    }
    if (done(active_[i])) {
      active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;  // waits for its running trials
    }
  }
  // Every bracket under way waits (or none is): start the next one.
  while (next_iteration_ < hb_.hyperband_iterations) {
    active_.push_back({.iteration = next_iteration_, .bracket = next_bracket_});
    if (++next_bracket_ >= static_cast<int>(schedule_.size())) {
      next_bracket_ = 0;
      ++next_iteration_;
    }
    ActiveBracket& b = active_.back();
    if (auto hp = next_in(b)) {
      b.round_trials.push_back(trial_id);
      return {TrialStatus::running, std::move(*hp)};
    }
    if (done(b)) active_.pop_back();
  }
  return {active_.empty() ? TrialStatus::stopped : TrialStatus::idle, {}};
}

nlohmann::json HyperbandOracle::algorithm_state() const {
  nlohmann::json brackets = nlohmann::json::array();
  for (const ActiveBracket& b : active_) {
    brackets.push_back({{"iteration", b.iteration},
                        {"bracket", b.bracket},
                        {"round", b.round},
                        {"round_trials", b.round_trials},
                        {"promote", b.promote}});
  }
  return {{"max_epochs", hb_.max_epochs},
          {"factor", hb_.factor},
          {"sampler", hyperband_sampler_name(hb_.sampler)},
          {"hyperband_iterations", hb_.hyperband_iterations},
          {"brackets", brackets},
          {"next_iteration", next_iteration_},
          {"next_bracket", next_bracket_}};
}

void HyperbandOracle::set_algorithm_state(const nlohmann::json& s) {
  OSPREY_CHECK_T(
      IoError,
      s.at("max_epochs").get<int>() == hb_.max_epochs && s.at("factor").get<int>() == hb_.factor,
      "Hyperband: the saved search used max_epochs={} factor={}, this one max_epochs={} factor={}; "
      "use "
      "another project_name or overwrite=true",
      s.at("max_epochs").get<int>(), s.at("factor").get<int>(), hb_.max_epochs, hb_.factor);
  const std::string sampler = s.value("sampler", std::string("random"));
  OSPREY_CHECK_T(IoError, sampler == hyperband_sampler_name(hb_.sampler),
                 "Hyperband: the saved search used sampler \"{}\", this one \"{}\"; use another "
                 "project_name or "
                 "overwrite=true",
                 sampler, hyperband_sampler_name(hb_.sampler));
  const int num_brackets = static_cast<int>(schedule_.size());
  auto check_bracket = [&](int bracket) {
    OSPREY_CHECK_T(IoError, bracket >= 0 && bracket < num_brackets,
                   "Hyperband: the saved search names bracket {}, the schedule has {}", bracket,
                   num_brackets);
  };
  active_.clear();
  if (s.contains("brackets")) {
    for (const auto& bj : s.at("brackets")) {
      ActiveBracket b{.iteration = bj.at("iteration").get<int>(),
                      .bracket = bj.at("bracket").get<int>(),
                      .round = bj.at("round").get<int>(),
                      .round_trials = bj.at("round_trials").get<std::vector<std::string>>(),
                      .promote = bj.at("promote").get<std::vector<std::string>>()};
      check_bracket(b.bracket);
      active_.push_back(std::move(b));
    }
    next_iteration_ = s.at("next_iteration").get<int>();
    next_bracket_ = s.at("next_bracket").get<int>();
    check_bracket(next_bracket_);
    return;
  }
  // A study saved before brackets could overlap: one bracket at a time, its round at the top
  // level. It becomes the one active bracket, and the next is the one after it.
  const int iteration = s.at("iteration").get<int>(), bracket = s.at("bracket").get<int>();
  check_bracket(bracket);
  next_iteration_ = iteration;
  next_bracket_ = bracket;
  if (iteration >= hb_.hyperband_iterations) return;
  active_.push_back({.iteration = iteration,
                     .bracket = bracket,
                     .round = s.at("round").get<int>(),
                     .round_trials = s.at("round_trials").get<std::vector<std::string>>(),
                     .promote = s.at("promote").get<std::vector<std::string>>()});
  if (++next_bracket_ >= num_brackets) {
    next_bracket_ = 0;
    ++next_iteration_;
  }
}

// The Hyperband tuner: KerasTuner's Hyperband.run_trial, a trial trains from its
// kTunerInitialEpoch to its kTunerEpochs.
void Hyperband::run_trial(const Trial& trial, const TrainData& data,
                          const train::FitOptions& options) {
  const HyperParameters& hp = trial.hyperparameters;
  if (!hp.has_value(kTunerEpochs)) return Tuner::run_trial(trial, data, options);
  train::FitOptions fo = options;
  fo.epochs = static_cast<int>(hp.get(kTunerEpochs).as_int());
  fo.initial_epoch = static_cast<int>(hp.get(kTunerInitialEpoch).as_int());
  Tuner::run_trial(trial, data, fo);
}

// A promoted trial goes on from where its parent stopped (weights, optimizer slots and
// iterations after its last epoch, not its best one), as successive halving continues a
// configuration, so its initial_epoch is the number of epochs its weights have really seen.
void Hyperband::prepare_model(const Trial& trial, Model& model) {
  const HyperParameters& hp = trial.hyperparameters;
  if (hp.has_value(kTunerTrialId)) load_end_state(hp.get(kTunerTrialId).as_string(), model);
}

// Successive halving (Hyperband's brackets, ASHA's rungs) may promote every trial that stopped
// short of max_epochs; the last rung of every bracket is max_epochs exactly, so this is Hyperband's
// "every round of a bracket but its last". Asked of the trial's values and the tuner's max_epochs,
// not of the oracle, so it holds on a worker whose oracle is a client of the chief's.
bool Hyperband::keeps_end_state(const Trial& trial) const {
  const HyperParameters& hp = trial.hyperparameters;
  return hp.has_value(kTunerEpochs) && hp.get(kTunerEpochs).as_int() < max_epochs_;
}

}  // namespace osprey::tune
