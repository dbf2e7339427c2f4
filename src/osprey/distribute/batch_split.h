// How a strategy shares a global batch among its replicas: evenly, in order (replica r gets rows
// [r * B / n, (r + 1) * B / n)), as views with no copy. The batch size given to fit or
// Dataset::batch is global (tf.distribute's semantics); global_batch_size() turns a per-replica
// size into it.
//   auto shards = split_batch(x, y, strategy.num_replicas_in_sync(), "MirroredStrategy");
//   model.fit(ds.batch(global_batch_size(64, strategy.num_replicas_in_sync())), ...);
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey::distribute {

struct Shards {
  std::vector<Tensor> x, y;  // y entries are undefined when y is
};

// ValueError naming both numbers (and `who`) when x's batch is not divisible by replicas, or
// when x and y disagree on it.
Shards split_batch(const Tensor& x, const Tensor& y, int replicas, std::string_view who);

// For inference, where the batch need not divide: `parts` shares as even as possible, in order
// (the first b % parts one row more); a share with no rows is an undefined tensor (as is every
// y entry when y is).
Shards split_batch_unevenly(const Tensor& x, const Tensor& y, int parts);

// per_replica * replicas; ValueError when either is below 1.
int64_t global_batch_size(int64_t per_replica, int64_t replicas);

}  // namespace osprey::distribute
