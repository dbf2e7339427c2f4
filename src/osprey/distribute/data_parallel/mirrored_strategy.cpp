#include "osprey/distribute/data_parallel/mirrored_strategy.h"

#include <algorithm>
#include <mutex>

#include "osprey/core/error.h"
#include "osprey/distribute/data_parallel/mirrored_executor.h"
#include "osprey/distribute/devices.h"

namespace osprey::distribute {

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices, MirroredOptions options)
    : StrategyBase(resolve_devices(devices, "MirroredStrategy")),
      options_(options),
      reducers_(std::make_shared<Reducers>()) {
  OSPREY_CHECK(options_.bucket_bytes >= 1,
               "MirroredStrategy: bucket_bytes must be at least 1. Received: {}",
               options_.bucket_bytes);
  OSPREY_CHECK(options_.first_bucket_bytes >= 1,
               "MirroredStrategy: first_bucket_bytes must be at least 1. Received: {}",
               options_.first_bucket_bytes);
  OSPREY_CHECK(options_.threads_per_replica >= 0,
               "MirroredStrategy: threads_per_replica must be at least 0 (0: num_threads() / "
               "replicas). Received: {}",
               options_.threads_per_replica);
}

std::unique_ptr<train::StepExecutor> MirroredStrategy::make_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer) const {
  return make_mirrored_executor(std::move(network), std::move(optimizer),
                                {.replicas = num_replicas_in_sync(),
                                 .options = options_,
                                 .registry = reducers_,
                                 .owner = name(),
                                 .workers = nullptr,
                                 .compress = false,
                                 .per_worker_inputs = false});
}

MirroredStrategy::ReducerStats MirroredStrategy::reducer_stats() const {
  ReducerStats out;
  std::lock_guard<std::mutex> lock(reducers_->mutex);
  auto& live = reducers_->live;
  live.erase(std::remove_if(live.begin(), live.end(), [](const auto& w) { return w.expired(); }),
             live.end());
  for (const auto& w : live) {
    const auto r = w.lock();
    if (!r) continue;
    out += r->stats();
    out.ceiling = r->overlap_ceiling();  // the same buckets on every replica
    out.buckets = static_cast<int64_t>(r->buckets().size());
  }
  return out;
}

void MirroredStrategy::reset_reducer_stats() const {
  std::lock_guard<std::mutex> lock(reducers_->mutex);
  for (const auto& w : reducers_->live) {
    if (const auto r = w.lock()) r->reset_stats();
  }
}

}  // namespace osprey::distribute
