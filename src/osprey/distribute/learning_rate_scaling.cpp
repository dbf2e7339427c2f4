#include "osprey/distribute/learning_rate_scaling.h"

namespace osprey::distribute {

double scaled_learning_rate(double base, const train::Strategy& strategy, std::string_view rule) {
  return optim::scaled_learning_rate(base, strategy.num_replicas_in_sync(), rule);
}

optim::LearningRate warmup_to_scaled_learning_rate(double base, const train::Strategy& strategy,
                                                   int64_t warmup_steps, std::string_view rule) {
  return optim::LinearWarmup({.initial_learning_rate = base,
                              .warmup_steps = warmup_steps,
                              .schedule = scaled_learning_rate(base, strategy, rule)});
}

}  // namespace osprey::distribute
