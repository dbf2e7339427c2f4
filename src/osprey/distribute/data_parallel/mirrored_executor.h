// MirroredExecutor: the step executor of MirroredStrategy and MultiWorkerMirroredStrategy (one
// per compiled model). In-process replicas run on their virtual devices; with a WorkerGroup of
// several workers every collective becomes hierarchical (comm/hierarchical.h): the replicas of
// this process reduce first, then replica 0 reduces across workers. The global batch is the
// same on every worker (each reads the same batches and keeps its rows: tf.data's DATA
// sharding), worker w takes rows [w * B / W, (w + 1) * B / W) and splits them among its replicas,
// and after the step every worker receives every replica's loss and predictions, so its metrics,
// logs and callbacks see the whole global batch, the same on every worker.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "osprey/distribute/cluster/worker_group.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"

namespace osprey::distribute {

// The executors' live reducers, for MirroredStrategy::reducer_stats().
struct MirroredStrategy::Reducers {
  std::mutex mutex;
  std::vector<std::weak_ptr<GradientReducer>> live;
};

struct MirroredExecutorConfig {
  int replicas = 1;  // in this process
  MirroredOptions options;
  std::shared_ptr<MirroredStrategy::Reducers> registry;
  std::string owner = "MirroredStrategy";  // error messages
  std::shared_ptr<WorkerGroup> workers;    // null: this process alone
  bool compress = false;                   // bf16 on the wire across workers
  // Each worker's batches are its own share (auto_shard_policy "off"), not the global batch.
  bool per_worker_inputs = false;
};

std::unique_ptr<train::StepExecutor> make_mirrored_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
    MirroredExecutorConfig config);

}  // namespace osprey::distribute
