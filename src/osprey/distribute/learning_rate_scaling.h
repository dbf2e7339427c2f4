// Learning-rate scaling for a strategy's replica count (the global batch grows with it):
// "linear" (Goyal et al.) or "sqrt", reached through a linear warmup from the base rate, the
// recipe of the seeds. The arithmetic is optim::scaled_learning_rate; this names the strategy.
//   MirroredStrategy s({"cpu:0", "cpu:1", "cpu:2", "cpu:3"});
//   double lr = scaled_learning_rate(0.1, s);                        // 0.4
//   auto sched = warmup_to_scaled_learning_rate(0.1, s, 500, "sqrt"); // 0.1 -> 0.2 over 500 steps
#pragma once

#include <cstdint>
#include <string_view>

#include "osprey/optim/schedules.h"
#include "osprey/train/strategy.h"

namespace osprey::distribute {

double scaled_learning_rate(double base, const train::Strategy& strategy,
                            std::string_view rule = "linear");
// A LinearWarmup from base to the scaled rate over warmup_steps, then constant.
optim::LearningRate warmup_to_scaled_learning_rate(double base, const train::Strategy& strategy,
                                                   int64_t warmup_steps,
                                                   std::string_view rule = "linear");

}  // namespace osprey::distribute
