// What the parameter-server benchmarks share (bench_ps, bench_soak): the Fashion-MNIST MLP's
// variables (784-512-256-10, 535,818 float32 parameters) as a worker registers them, and the
// shard configuration they train it with (asynchronous SGD, one replica).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "osprey/core/shape.h"
#include "osprey/distribute/ps/parameter_shard.h"
#include "osprey/optim/factory.h"

namespace osprey::bench {

inline const std::vector<std::pair<std::string, Shape>>& ps_mlp_variables() {
  static const std::vector<std::pair<std::string, Shape>> v = {
      {"dense/kernel", Shape{784, 512}},   {"dense/bias", Shape{512}},
      {"dense_1/kernel", Shape{512, 256}}, {"dense_1/bias", Shape{256}},
      {"dense_2/kernel", Shape{256, 10}},  {"dense_2/bias", Shape{10}}};
  return v;
}

inline distribute::ps::ShardConfig ps_async_sgd_config() {
  return {.optimizer = optim::serialize(*optim::get("sgd")).dump(),
          .mode = "async",
          .replicas_to_aggregate = 1,
          .total_replicas = 1,
          .staleness = {}};
}

}  // namespace osprey::bench
