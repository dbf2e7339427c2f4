// ParameterServerStrategy: data-parallel training with the variables on parameter servers
// (tf.distribute.ParameterServerStrategy, with seed 002's synchronous mode with backup replicas
// and asynchronous mode with staleness control, which TF2 dropped). The cluster comes from
// OSPREY_CONFIG / TF_CONFIG: a chief (the coordinator), workers, and ps tasks that run
// `osprey ps --listen HOST:PORT`. Every task but the ps runs the same program:
//  - on the chief, fit splits each global batch into one share per worker and sends the shares
//    as closures to the workers (ps/internal/cluster_coordinator.h); the trained weights come
//    back from the parameter servers at the end of each epoch;
//  - on a worker, fit serves the chief's steps until the chief's fit ends: each step pulls the
//    variables, runs forward and backward on its share and pushes the gradients; the ps apply
//    the optimizer, whose slots live there.
// sync: the ps apply each step once, from the first replicas_to_aggregate shares to arrive;
// later ones are dropped and counted (n - k backup replicas absorb a slow worker). async: each
// share is applied as it arrives, its staleness bounded or weighted (ps::StalenessPolicy).
// Without ps tasks in the cluster the chief hosts the one ps itself (CentralStorageStrategy
// across processes).
//   // TF_CONFIG='{"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"],
//   //             "ps": ["h3:2222"]}, "task": {"type": "worker", "index": 0}}'
//   os::distribute::ParameterServerStrategy strategy({.replicas_to_aggregate = 1});
//   { auto scope = strategy.scope(); model.compile("sgd", "sparse_categorical_crossentropy"); }
//   model.fit(x, y, {.batch_size = 64 * strategy.num_replicas_in_sync(), .epochs = 3});
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "osprey/distribute/cluster/cluster_resolver.h"
#include "osprey/distribute/ps/parameter_shard.h"
#include "osprey/distribute/ps/variable_sharding.h"
#include "osprey/distribute/strategy_base.h"

namespace osprey::distribute {

struct ParameterServerOptions {
  std::string mode = "sync";  // "sync" or "async"
  // sync: the shares applied per step, k of the n workers (0: all, no backup replicas).
  int replicas_to_aggregate = 0;
  ps::StalenessPolicy staleness{};  // async
  // async: the first epochs run on worker 0 alone (seed 002's warm-up against early staleness).
  int warmup_epochs = 0;
  ps::Placement placement = ps::Placement::round_robin;
  ps::VariablePartitioner variable_partitioner{};  // empty: no variable is split
  std::string compression = "none";  // "bf16": gradients travel as bfloat16 (half the bytes)
  // Deadline of each call to a worker or a ps; also how long a worker waits for the chief.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  std::string token{};  // empty: OSPREY_PS_TOKEN, when set
  int64_t max_message_bytes = int64_t{256} << 20;
};

class ParameterServerStrategy final : public StrategyBase {
 public:
  // cluster: unset reads the environment. Throws ValueError for a cluster without a chief or a
  // worker, for a ps task (it runs `osprey ps`), and for bad options; NotImplementedError in a
  // build without gRPC. A worker starts serving its address here.
  explicit ParameterServerStrategy(ParameterServerOptions options = {},
                                   std::optional<ClusterResolver> cluster = std::nullopt);
  std::string name() const override { return "ParameterServerStrategy"; }
  std::string describe() const override;
  // The workers: each computes one share of a global step.
  int num_replicas_in_sync() const override { return num_cluster_workers_; }
  // The chief and the workers (the chief is rank 0): files are written on the chief only.
  int num_workers() const noexcept override { return num_cluster_workers_ + 1; }
  int worker_rank() const noexcept override { return rank_; }
  std::unique_ptr<train::StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override;
  std::shared_ptr<const train::Strategy> clone() const override {
    return std::make_shared<ParameterServerStrategy>(*this);
  }
  const ParameterServerOptions& options() const noexcept { return options_; }
  const ClusterResolver& cluster() const noexcept { return cluster_; }
  // The k of k-of-n (sync): replicas_to_aggregate, or every worker.
  int replicas_to_aggregate() const noexcept;

  // What a task of this process keeps between fits: a worker's step service, the chief's
  // in-process ps. Shared by copies of the strategy.
  struct Runtime;

 private:
  ParameterServerOptions options_;
  ClusterResolver cluster_;
  int num_cluster_workers_ = 0;
  int rank_ = 0;
  std::shared_ptr<Runtime> runtime_;
};

}  // namespace osprey::distribute
