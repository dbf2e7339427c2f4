#include "osprey/distribute/batch_split.h"

#include <algorithm>

#include "osprey/core/error.h"

namespace osprey::distribute {

Shards split_batch(const Tensor& x, const Tensor& y, int replicas, std::string_view who) {
  OSPREY_CHECK(replicas >= 1, "{}: the number of replicas must be at least 1. Received: {}", who,
               replicas);
  OSPREY_CHECK(x.defined() && x.ndim() >= 1, "{}: the batch must be a tensor with a batch axis",
               who);
  const int64_t b = x.size(0);
  OSPREY_CHECK(b % replicas == 0,
               "{}: the global batch size {} is not divisible by the {} replicas in sync; use a "
               "multiple of {} "
               "(global_batch_size(per_replica, {}))",
               who, b, replicas, replicas, replicas);
  if (y.defined()) {
    OSPREY_CHECK(y.ndim() >= 1 && y.size(0) == b,
                 "{}: x and y must have the same batch size. Received: x {} and y {}", who,
                 x.shape().to_string(), y.shape().to_string());
  }
  const int64_t per = b / replicas;
  Shards s;
  for (int r = 0; r < replicas; ++r) {
    s.x.push_back(replicas == 1 ? x : x.narrow(0, r * per, per));
    s.y.push_back(!y.defined() ? Tensor() : replicas == 1 ? y : y.narrow(0, r * per, per));
  }
  return s;
}

Shards split_batch_unevenly(const Tensor& x, const Tensor& y, int parts) {
  const int64_t b = x.size(0);
  const int64_t base = b / parts, extra = b % parts;
  auto start = [&](int r) { return r * base + std::min<int64_t>(r, extra); };
  Shards s;
  for (int r = 0; r < parts; ++r) {
    const int64_t len = start(r + 1) - start(r);
    s.x.push_back(len > 0 ? x.narrow(0, start(r), len) : Tensor());
    s.y.push_back(len > 0 && y.defined() ? y.narrow(0, start(r), len) : Tensor());
  }
  return s;
}

int64_t global_batch_size(int64_t per_replica, int64_t replicas) {
  OSPREY_CHECK(per_replica >= 1, "global_batch_size: per_replica must be at least 1. Received: {}",
               per_replica);
  OSPREY_CHECK(replicas >= 1, "global_batch_size: replicas must be at least 1. Received: {}",
               replicas);
  return per_replica * replicas;
}

}  // namespace osprey::distribute
