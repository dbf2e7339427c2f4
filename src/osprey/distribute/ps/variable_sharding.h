// Where a model's variables live on the parameter servers (tf.distribute's variable placement
// and variable_partitioner). Variables are assigned to ps tasks by path, round-robin in path
// order or balanced by size; a partitioner splits a large variable along its first axis into
// parts ("dense/kernel/part_0", ...), each placed like a variable of its own. The plan depends
// only on the variables' paths and shapes and the options, so the chief and every worker compute
// the same one from the same model.
//   auto plan = plan_sharding(vars, 2, {.placement = Placement::balanced,
//                                       .partitioner = fixed_shards_partitioner(2)});
//   plan.describe();   // one line per part: name, rows, ps
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/core/shape.h"

namespace osprey::distribute::ps {

// How many parts a variable is split into along axis 0 (1: not split); at most its first
// dimension (a scalar or an empty first axis is never split). Called with the path and shape.
using VariablePartitioner = std::function<int(const std::string& path, const Shape& shape)>;

// Every variable is split into num_shards parts, or into as many as its first axis has rows
// when that is fewer (tf.distribute's FixedShardsPartitioner).
VariablePartitioner fixed_shards_partitioner(int num_shards);
// As many parts as keep each at least min_shard_bytes (float32), at most max_shards
// (MinSizePartitioner).
VariablePartitioner min_size_partitioner(int64_t min_shard_bytes = int64_t{256} << 10,
                                         int max_shards = 1);
// As few parts as keep each at most max_shard_bytes, at most max_shards (0: no limit)
// (MaxSizePartitioner).
VariablePartitioner max_size_partitioner(int64_t max_shard_bytes, int max_shards = 0);

enum class Placement { round_robin, balanced };

struct ShardingOptions {
  Placement placement = Placement::round_robin;
  VariablePartitioner partitioner{};  // empty: no variable is split
};

// One piece of a variable as one ps holds it: rows [row_begin, row_end) of axis 0 (the whole
// variable when it is not split).
struct VariablePart {
  std::string name;  // the ps-side name: the path, or "<path>/part_<i>"
  int ps = 0;
  int64_t row_begin = 0, row_end = 0;
  Shape shape;  // the part's shape
};

struct VariablePlacement {
  std::string path;
  Shape shape;
  std::vector<VariablePart> parts;  // in row order
};

struct ShardingPlan {
  int num_ps = 0;
  std::vector<VariablePlacement> variables;  // in the order given
  // Bytes (float32) each ps holds.
  std::vector<int64_t> bytes_per_ps() const;
  // "dense/kernel [784, 512] -> ps 0 rows 0-391, ps 1 rows 392-783" per variable.
  std::string describe() const;
};

// The plan for variables given as (path, shape), in that order. Throws ValueError for
// num_ps < 1, a duplicate path, or a partitioner asking for less than one part.
ShardingPlan plan_sharding(const std::vector<std::pair<std::string, Shape>>& variables, int num_ps,
                           const ShardingOptions& options = {});

}  // namespace osprey::distribute::ps
