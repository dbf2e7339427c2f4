// HyperbandOracle (Li et al., "Hyperband", JMLR 2018): brackets s = s_max .. 0 of successive
// halving. Bracket s starts n = ceil((s_max + 1) / (s + 1) * factor^s) random configurations
// at max_epochs / factor^s epochs and keeps the best 1/factor of each round for factor times
// more epochs, up to max_epochs. A promoted trial is a new trial with the same values and
// kTunerTrialId naming its parent; the Hyperband tuner (builtin_tuners.h, its run_trial in
// hyperband.cpp) starts it from the state its parent ended in at epoch kTunerInitialEpoch, so it
// trains only the extra epochs. The schedule for max_epochs = 81, factor = 3 is Table 1 of the
// paper:
//   s=4: 81x1 27x3 9x9 3x27 1x81 · s=3: 34x3 11x9 3x27 1x81 · s=2: 15x9 5x27 1x81
//   s=1: 8x27 2x81 · s=0: 5x81
// Each trial carries the values below among its hyperparameters' (kTunerTrialId only when
// promoted), under KerasTuner's names.
// sampler = HyperbandSampler::bayesian draws each bracket's new configurations from a model
// instead, in the spirit of BOHB (Falkner et al., ICML 2018) with osprey's Gaussian process in
// place of BOHB's density estimator: one GP over the scored trials of every rung, with the budget
// as an extra input (log epochs, 1 at max_epochs), proposes by expected improvement at max_epochs,
// once num_initial_points trials are scored (0: dimensions + 1). A random_fraction of the new
// configurations stay random so the model cannot lock the search out of a region; values
// proposed in a running bracket's current round and not yet scored enter the GP at its own
// prediction, so one round's proposals spread out. Promotion is unchanged: successive halving
// still decides which configurations train longer.
//
// With parallel workers a round cannot promote until every one of its trials ended; rather than
// leave workers idle, the oracle then starts the next bracket not started yet (the next s, or the
// next iteration's first), so several brackets may run at once, each with its own round. It
// answers idle only when every running bracket waits and none is left to start. One worker (each
// trial ended before the next is asked for) sees exactly the serial schedule above.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "osprey/tune/bayesian_optimization.h"
#include "osprey/tune/oracle.h"

namespace osprey::tune {

inline constexpr char kTunerEpochs[] = "tuner/epochs";  // epochs a trial has seen at its end
inline constexpr char kTunerInitialEpoch[] = "tuner/initial_epoch";  // ... at its start
inline constexpr char kTunerBracket[] = "tuner/bracket";             // s
inline constexpr char kTunerRound[] = "tuner/round";                 // its rung in the bracket
inline constexpr char kTunerTrialId[] = "tuner/trial_id";            // a promoted trial's parent

struct HyperbandRung {
  int num_trials = 0;
  int epochs = 0;  // total epochs a trial of this rung has trained at its end
};
struct HyperbandBracket {
  int s = 0;
  std::vector<HyperbandRung> rungs;
};
// The brackets of one Hyperband iteration, s_max first. ValueError unless max_epochs >= 1 and
// factor >= 2.
std::vector<HyperbandBracket> hyperband_schedule(int max_epochs, int factor);
// Epochs one iteration trains when promoted trials resume from their parent (sum over rungs
// of num_trials x (epochs - previous rung's epochs)).
int64_t hyperband_epoch_budget(const std::vector<HyperbandBracket>& schedule);

// Where Hyperband's new configurations come from: uniform draws, or a GP fitted to the scores so
// far (random_fraction of them still uniform).
enum class HyperbandSampler { random, bayesian };
// "random" / "bayesian" <-> HyperbandSampler; ValueError naming `where` for another name.
HyperbandSampler parse_hyperband_sampler(const std::string& name, const std::string& where);
const char* hyperband_sampler_name(HyperbandSampler sampler);

struct HyperbandOracleOptions {
  int max_epochs = 100;
  int factor = 3;
  int hyperband_iterations = 1;
  HyperbandSampler sampler = HyperbandSampler::random;
  BayesianOptimizationOracleOptions bayesian{.acquisition = Acquisition::ei};
  double random_fraction = 1.0 / 3;  // of the bayesian sampler's new configurations
};

class HyperbandOracle : public Oracle {
 public:
  HyperbandOracle(OracleOptions options, HyperbandOracleOptions hb = {});
  const char* class_name() const override { return "Hyperband"; }
  const std::vector<HyperbandBracket>& schedule() const { return schedule_; }

 protected:
  Proposal populate_space(const std::string& trial_id) override;
  nlohmann::json algorithm_state() const override;
  void set_algorithm_state(const nlohmann::json& state) override;

 private:
  // A bracket under way: where it is in the schedule and its current round.
  struct ActiveBracket {
    int iteration = 0, bracket = 0;           // bracket: its index in schedule_
    int round = 0;                            // == its rung count once it is done
    std::vector<std::string> round_trials{};  // trials created in its current round
    std::vector<std::string> promote{};  // parents to promote into its current round, best first
  };

  // The values of the next trial of b's current round, moving b on through rounds that are over;
  // nullopt when b waits for running trials or is done.
  std::optional<HyperParameters> next_in(ActiveBracket& b);
  bool done(const ActiveBracket& b) const;
  // A new configuration for a round 0: from the model when the sampler is bayesian and a budget
  // has enough scored trials, else random.
  HyperParameters new_configuration();

  HyperbandOracleOptions hb_;
  std::vector<HyperbandBracket> schedule_;
  std::vector<ActiveBracket> active_;          // started and not done, oldest first
  int next_iteration_ = 0, next_bracket_ = 0;  // the next bracket to start
};

}  // namespace osprey::tune
