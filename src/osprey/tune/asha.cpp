#include "osprey/tune/asha.h"

#include <algorithm>
#include <cstdint>

#include "osprey/core/error.h"

namespace osprey::tune {

std::vector<int> asha_rungs(const AshaOracleOptions& o) {
  OSPREY_CHECK(o.max_epochs >= 1, "ASHA: max_epochs must be >= 1. Received: max_epochs={}",
               o.max_epochs);
  OSPREY_CHECK(o.min_epochs >= 1 && o.min_epochs <= o.max_epochs,
               "ASHA: min_epochs must be in [1, max_epochs={}]. Received: min_epochs={}",
               o.max_epochs, o.min_epochs);
  OSPREY_CHECK(o.factor >= 2, "ASHA: factor must be >= 2. Received: factor={}", o.factor);
  std::vector<int> rungs;
  // r stays <= max_epochs before each multiplication, so int64 cannot overflow.
  for (int64_t r = o.min_epochs;; r *= o.factor) {
    rungs.push_back(static_cast<int>(std::min<int64_t>(r, o.max_epochs)));
    if (rungs.back() == o.max_epochs) break;
  }
  return rungs;
}

AshaOracle::AshaOracle(OracleOptions options, AshaOracleOptions asha)
    : Oracle(std::move(options)), asha_(asha), rungs_(asha_rungs(asha)) {
  OSPREY_CHECK(options_.max_trials > 0,
               "ASHA: max_trials must be positive (ASHA runs until it has created max_trials "
               "trials). Received: max_trials={}",
               options_.max_trials);
}

// get_job of Algorithm 2: the highest rung with a promotable trial wins, so configurations that
// did well reach max_epochs as early as possible; only then does a new configuration start.
Oracle::Proposal AshaOracle::populate_space(const std::string& trial_id) {
  const std::vector<const Trial*> done = completed_trials();
  for (int k = static_cast<int>(rungs_.size()) - 2; k >= 0; --k) {
    // Only completed trials are in a rung: a trial still running (another worker's) has no score
    // yet, so the top 1/factor is taken over what is known now.
    std::vector<const Trial*> rung;
    for (const Trial* t : done) {
      if (t->hyperparameters.get(kTunerRound).as_int() == k) rung.push_back(t);
    }
    // Creation order breaks ties: the earlier trial first.
    std::stable_sort(rung.begin(), rung.end(), [&](const Trial* a, const Trial* b) {
      return objective().better(*a->score, *b->score);
    });
    const size_t promotable = rung.size() / static_cast<size_t>(asha_.factor);
    for (size_t i = 0; i < promotable; ++i) {
      const Trial& parent = *rung[i];
      if (promoted_.count(parent.trial_id) > 0) continue;
      promoted_.insert(parent.trial_id);
      HyperParameters hp = parent.hyperparameters;
      hp.set(kTunerTrialId, parent.trial_id);
      hp.set(kTunerInitialEpoch, int64_t{rungs_[k]});
      hp.set(kTunerEpochs, int64_t{rungs_[k + 1]});
      hp.set(kTunerRound, int64_t{k + 1});
      hp.set(kTunerBracket, int64_t{0});
      return {TrialStatus::running, std::move(hp)};
    }
  }
  auto fresh = random_unseen_values();
  HyperParameters hp = fresh ? std::move(*fresh) : random_values();  // a small space may repeat
  hp.set(kTunerInitialEpoch, int64_t{0});
  hp.set(kTunerEpochs, int64_t{rungs_[0]});
  hp.set(kTunerRound, int64_t{0});
  hp.set(kTunerBracket, int64_t{0});
  return {TrialStatus::running, std::move(hp)};
}

nlohmann::json AshaOracle::algorithm_state() const {
  return {{"max_epochs", asha_.max_epochs},
          {"min_epochs", asha_.min_epochs},
          {"factor", asha_.factor},
          {"promoted", promoted_}};
}

void AshaOracle::set_algorithm_state(const nlohmann::json& s) {
  const int max_epochs = s.at("max_epochs").get<int>(), min_epochs = s.at("min_epochs").get<int>(),
            factor = s.at("factor").get<int>();
  OSPREY_CHECK_T(
      IoError,
      max_epochs == asha_.max_epochs && min_epochs == asha_.min_epochs && factor == asha_.factor,
      "ASHA: the saved search used max_epochs={} min_epochs={} factor={}, this one "
      "max_epochs={} min_epochs={} factor={}; use another project_name or "
      "overwrite=true",
      max_epochs, min_epochs, factor, asha_.max_epochs, asha_.min_epochs, asha_.factor);
  promoted_ = s.at("promoted").get<std::set<std::string>>();
}

}  // namespace osprey::tune
