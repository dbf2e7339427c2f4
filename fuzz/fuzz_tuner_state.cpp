// A study's files: trial.json (one trial: values, metrics per execution and epoch, status) and
// oracle.json with its trials inline (what the oracle service sends, and what set_state reads).
// The first byte picks the file and, for oracle.json, the algorithm whose state it holds; once
// loaded, the oracle is asked for a trial and its best, so the state is also used, not only
// parsed.
#include "fuzz_target.h"
#include "osprey/io/json.h"
#include "osprey/tune/asha.h"
#include "osprey/tune/bayesian_optimization.h"
#include "osprey/tune/hyperband.h"
#include "osprey/tune/random_search.h"
#include "osprey/tune/trial.h"

namespace {

std::unique_ptr<osprey::tune::Oracle> make_oracle(uint8_t pick) {
  using namespace osprey::tune;
  OracleOptions o;
  o.objective = "loss";  // what the seed studies optimized (fuzz/make_corpus.sh)
  o.max_trials = 4;
  o.seed = 1;
  switch (pick % 4) {
    case 0:
      return std::make_unique<RandomSearchOracle>(o);
    case 1:
      return std::make_unique<BayesianOptimizationOracle>(o);
    case 2:
      return std::make_unique<HyperbandOracle>(o, HyperbandOracleOptions{.max_epochs = 2});
    default:
      return std::make_unique<AshaOracle>(o, AshaOracleOptions{.max_epochs = 2});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  fuzz::expect_refusal_or_success([&] {
    const nlohmann::json j = io::parse_json(text, "fuzz input");
    if (pick & 0x80) {
      const tune::Trial t = tune::Trial::from_json(j, "fuzz input");
      (void)t.to_json().dump();
      return;
    }
    std::unique_ptr<tune::Oracle> oracle = make_oracle(pick);
    oracle->set_state(j);
    (void)oracle->get_best_trials(2);
    const tune::Trial t = oracle->create_trial("fuzz");
    if (!t.trial_id.empty()) oracle->end_trial(t.trial_id, tune::TrialStatus::completed);
  });
  return 0;
}
