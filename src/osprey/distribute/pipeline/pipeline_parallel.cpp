#include "osprey/distribute/pipeline/pipeline_parallel.h"

#include <fmt/format.h>

#include "osprey/core/error.h"
#include "osprey/distribute/cluster/cluster_resolver.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/pipeline/pipeline_executor.h"

namespace osprey::distribute {

PipelineParallel::PipelineParallel(PipelineOptions options)
    : StrategyBase(
          resolve_devices(virtual_devices(options.stages * options.replicas), "PipelineParallel")),
      options_(std::move(options)),
      shared_(std::make_shared<Shared>()) {
  OSPREY_CHECK(options_.stages >= 1 && options_.micro_batches >= 1 && options_.replicas >= 1,
               "PipelineParallel: stages, micro_batches and replicas must be at least 1. "
               "Received: stages={}, micro_batches={}, replicas={}",
               options_.stages, options_.micro_batches, options_.replicas);
  OSPREY_CHECK(options_.split_points.empty() ||
                   static_cast<int>(options_.split_points.size()) == options_.stages - 1,
               "PipelineParallel: {} stages need {} split points. Received: {}", options_.stages,
               options_.stages - 1, options_.split_points.size());
  if (!options_.single_process) {
    const ClusterResolver cluster = ClusterResolver::from_environment();
    if (cluster.num_workers() > 1) {
      OSPREY_CHECK(options_.stages == cluster.num_workers() && options_.replicas == 1,
                   "PipelineParallel: across {} workers each worker runs one stage of one "
                   "pipeline: set stages={} and replicas=1 (received stages={}, replicas={}), or "
                   "single_process to keep every stage in this process",
                   cluster.num_workers(), cluster.num_workers(), options_.stages,
                   options_.replicas);
      group_ = WorkerGroup::connect(cluster, {.caller = "PipelineParallel"});
    }
  }
}

std::string PipelineParallel::describe() const {
  return fmt::format("PipelineParallel(stages={}, micro_batches={}, schedule={}, replicas={})",
                     options_.stages, options_.micro_batches, to_string(options_.schedule),
                     options_.replicas);
}

std::unique_ptr<train::StepExecutor> PipelineParallel::make_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer) const {
  return make_pipeline_executor(std::move(network), std::move(optimizer), options_, shared_,
                                group_);
}

PipelineStats PipelineParallel::stats() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->stats;
}

void PipelineParallel::reset_stats() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->stats = {};
}

double PipelineStats::bubble() const {
  if (busy_seconds.empty() || wall_seconds <= 0.0) return 0.0;
  double busy = 0.0;
  for (double b : busy_seconds) busy += b;
  return 1.0 - busy / (static_cast<double>(busy_seconds.size()) * wall_seconds);
}

}  // namespace osprey::distribute
