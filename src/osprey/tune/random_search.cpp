#include "osprey/tune/random_search.h"

namespace osprey::tune {

Oracle::Proposal RandomSearchOracle::populate_space(const std::string& trial_id) {
  auto values = random_unseen_values();
  if (!values) return {TrialStatus::stopped, {}};
  return {TrialStatus::running, std::move(*values)};
}

}  // namespace osprey::tune
