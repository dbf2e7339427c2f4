#include "osprey/distribute/ps/variable_sharding.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "osprey/core/error.h"

namespace osprey::distribute::ps {

namespace {

int64_t first_axis(const Shape& shape) { return shape.ndim() == 0 ? 1 : shape[0]; }

int64_t float_bytes(const Shape& shape) {
  return shape.numel() * static_cast<int64_t>(sizeof(float));
}

}  // namespace

VariablePartitioner fixed_shards_partitioner(int num_shards) {
  OSPREY_CHECK(num_shards >= 1,
               "fixed_shards_partitioner: num_shards must be at least 1. Received: {}", num_shards);
  return [num_shards](const std::string&, const Shape&) { return num_shards; };
}

VariablePartitioner min_size_partitioner(int64_t min_shard_bytes, int max_shards) {
  OSPREY_CHECK(min_shard_bytes >= 1 && max_shards >= 1,
               "min_size_partitioner: min_shard_bytes and max_shards must be at least 1. "
               "Received: {} and {}",
               min_shard_bytes, max_shards);
  return [=](const std::string&, const Shape& shape) {
    const int64_t parts = std::max<int64_t>(1, float_bytes(shape) / min_shard_bytes);
    return static_cast<int>(std::min<int64_t>(parts, max_shards));
  };
}

VariablePartitioner max_size_partitioner(int64_t max_shard_bytes, int max_shards) {
  OSPREY_CHECK(max_shard_bytes >= 1 && max_shards >= 0,
               "max_size_partitioner: max_shard_bytes must be at least 1 and max_shards at least "
               "0. Received: {} and {}",
               max_shard_bytes, max_shards);
  return [=](const std::string&, const Shape& shape) {
    const int64_t parts =
        std::max<int64_t>(1, (float_bytes(shape) + max_shard_bytes - 1) / max_shard_bytes);
    return static_cast<int>(max_shards > 0 ? std::min<int64_t>(parts, max_shards) : parts);
  };
}

std::vector<int64_t> ShardingPlan::bytes_per_ps() const {
  std::vector<int64_t> bytes(static_cast<size_t>(num_ps), 0);
  for (const auto& v : variables) {
    for (const auto& p : v.parts) bytes[static_cast<size_t>(p.ps)] += float_bytes(p.shape);
  }
  return bytes;
}

std::string ShardingPlan::describe() const {
  std::string out;
  for (const auto& v : variables) {
    out += fmt::format("{} {} ->", v.path, v.shape.to_string());
    for (size_t i = 0; i < v.parts.size(); ++i) {
      const VariablePart& p = v.parts[i];
      out += fmt::format("{} ps {}", i > 0 ? "," : "", p.ps);
      if (v.parts.size() > 1) out += fmt::format(" rows {}-{}", p.row_begin, p.row_end - 1);
    }
    out += "\n";
  }
  return out;
}

ShardingPlan plan_sharding(const std::vector<std::pair<std::string, Shape>>& variables, int num_ps,
                           const ShardingOptions& options) {
  OSPREY_CHECK(num_ps >= 1, "plan_sharding: num_ps must be at least 1. Received: {}", num_ps);
  ShardingPlan plan{num_ps, {}};
  std::set<std::string> seen;
  for (const auto& [path, shape] : variables) {
    OSPREY_CHECK(seen.insert(path).second,
                 "plan_sharding: two variables share the path '{}'; parameter servers key "
                 "variables by path",
                 path);
    VariablePlacement placement{path, shape, {}};
    int parts = 1;
    if (options.partitioner && shape.ndim() > 0 && shape[0] > 1) {
      parts = options.partitioner(path, shape);
      OSPREY_CHECK(parts >= 1,
                   "plan_sharding: the partitioner asked for {} parts of variable {}; at least 1 "
                   "expected",
                   parts, path);
      parts = static_cast<int>(std::min<int64_t>(parts, shape[0]));
    }
    // Rows as evenly as possible, the first parts one longer (as TensorFlow splits).
    const int64_t rows = first_axis(shape);
    int64_t begin = 0;
    for (int i = 0; i < parts; ++i) {
      const int64_t len = rows / parts + (i < rows % parts ? 1 : 0);
      VariablePart part;
      part.name = parts == 1 ? path : fmt::format("{}/part_{}", path, i);
      part.row_begin = begin;
      part.row_end = begin + len;
      part.shape = shape;
      if (shape.ndim() > 0) part.shape[0] = len;
      begin += len;
      placement.parts.push_back(std::move(part));
    }
    plan.variables.push_back(std::move(placement));
  }
  // Placement: round-robin over every part in order, or each part (largest first; ties in
  // order) to the ps holding the fewest bytes so far (ties: the lowest index).
  std::vector<VariablePart*> all;
  for (auto& v : plan.variables) {
    for (auto& p : v.parts) all.push_back(&p);
  }
  if (options.placement == Placement::round_robin) {
    for (size_t i = 0; i < all.size(); ++i) all[i]->ps = static_cast<int>(i % num_ps);
  } else {
    std::vector<VariablePart*> order = all;
    std::stable_sort(order.begin(), order.end(), [](const VariablePart* a, const VariablePart* b) {
      return a->shape.numel() > b->shape.numel();
    });
    std::vector<int64_t> load(static_cast<size_t>(num_ps), 0);
    for (VariablePart* p : order) {
      const auto least = std::min_element(load.begin(), load.end());
      p->ps = static_cast<int>(least - load.begin());
      *least += float_bytes(p->shape);
    }
  }
  return plan;
}

}  // namespace osprey::distribute::ps
