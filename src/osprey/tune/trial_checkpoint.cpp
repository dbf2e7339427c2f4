#include "osprey/tune/trial_checkpoint.h"

namespace osprey::tune {

void save_trial_checkpoint(const std::filesystem::path& dir, const Model& model) {
  model.save(dir.string());
}

void load_trial_weights(const std::filesystem::path& dir, Model& model) {
  model.load_weights(dir.string());
}

void load_trial_checkpoint(const std::filesystem::path& dir, Model& model) {
  model.load_weights(dir.string());
  model.load_optimizer_state(dir.string());
}

}  // namespace osprey::tune
