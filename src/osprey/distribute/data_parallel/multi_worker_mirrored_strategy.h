// MultiWorkerMirroredStrategy: synchronous data parallelism across processes and machines
// (tf.distribute.MultiWorkerMirroredStrategy), each process (worker) running MirroredStrategy's
// in-process replicas. The cluster comes from OSPREY_CONFIG / TF_CONFIG, mpirun or Slurm
// (cluster_resolver.h); constructing the strategy connects the workers (a collective). Gradients
// are reduced hierarchically, bucketed and overlapped with backward; the bucket size is chosen at
// start-up from a short all-reduce curve measured on this job's transport (logged by the chief),
// unless set. Optional compression sends bf16 across workers and accumulates in f32. Every
// worker reads the same global batches and keeps its rows; losses and predictions are gathered,
// so logs, metrics and callbacks agree on every worker. Initial weights are the chief's.
//   os::distribute::MultiWorkerMirroredStrategy strategy;   // under mpirun -np 2, or TF_CONFIG
//   { auto scope = strategy.scope(); model.compile("adam", "sparse_categorical_crossentropy"); }
//   model.fit(x, y, {.batch_size = 64 * strategy.num_replicas_in_sync()});
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/distribute/cluster/cluster_resolver.h"
#include "osprey/distribute/cluster/worker_group.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"

namespace osprey::distribute {

struct MultiWorkerOptions {
  Communication communication = Communication::automatic;  // worker_group.h
  std::string compression = "none";  // none or bf16 (cross-worker gradients only)
  int64_t bucket_bytes = 0;          // 0: measured at start-up (choose_bucket_bytes)
  int64_t first_bucket_bytes = kDefaultFirstBucketBytes;
  int threads_per_replica = 0;
  // Deadline of every cross-worker call and of connecting the workers (comm/deadline.h).
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // How fit's inputs are shared among workers (tf.data's AutoShardPolicy):
  //   "auto", "data": every worker reads the same global batches and keeps its rows (tf.data's
  //     DATA; what AUTO falls back to for sources that are not one file per shard, as all of
  //     osprey's are: IDX, CSV, arrays);
  //   "off": each worker's batches are its own (already sharded by the program, e.g.
  //     ds.batch(per_worker).shard(num_workers, worker_rank)); the global batch is their union;
  //   "file": sharding by input file; an error until osprey has a one-file-per-shard source.
  std::string auto_shard_policy = "auto";
};

class MultiWorkerMirroredStrategy final : public StrategyBase {
 public:
  // devices: this worker's ({}: every local device); cluster: unset reads the environment.
  explicit MultiWorkerMirroredStrategy(const std::vector<std::string>& devices = {},
                                       MultiWorkerOptions options = {},
                                       std::optional<ClusterResolver> cluster = std::nullopt);
  std::string name() const override { return "MultiWorkerMirroredStrategy"; }
  std::string describe() const override;
  int num_replicas_in_sync() const override {
    return static_cast<int>(devices_.size()) * num_workers();
  }
  std::unique_ptr<train::StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override;
  std::shared_ptr<const train::Strategy> clone() const override {
    return std::make_shared<MultiWorkerMirroredStrategy>(*this);
  }

  int num_workers() const noexcept override { return group_->size(); }
  int worker_rank() const noexcept override { return group_->rank(); }
  const std::string& backend() const noexcept { return group_->backend(); }
  const ClusterResolver& cluster() const noexcept { return cluster_; }
  const MultiWorkerOptions& options() const noexcept { return options_; }
  // The workers' connection (its communicators are idle between steps: a program may use
  // outputs() for its own collectives then, e.g. to check or gather results).
  const std::shared_ptr<WorkerGroup>& worker_group() const noexcept { return group_; }
  // Over the outputs communicator (comm/clock_sync.h), for the profiler.
  TraceClockOffset trace_clock_offset() const override;
  std::vector<std::string> gather_on_chief(const std::string& text) const override;
  // The gradient bucket size in use (measured or given).
  int64_t bucket_bytes() const noexcept { return bucket_bytes_; }

 private:
  MultiWorkerOptions options_;
  ClusterResolver cluster_;
  std::shared_ptr<WorkerGroup> group_;  // shared by copies: one connection per process
  int64_t bucket_bytes_ = kDefaultBucketBytes;
  std::shared_ptr<MirroredStrategy::Reducers> reducers_;
};

// The all-reduce curve of a communicator: seconds per all-reduce of each size (median of
// `repeats`, after a warm-up). Every rank of the communicator must call it.
struct AllReducePoint {
  int64_t bytes = 0;
  double seconds = 0.0;
};
std::vector<AllReducePoint> measure_all_reduce(comm::Communicator& c,
                                               const std::vector<int64_t>& sizes, bool bf16,
                                               int repeats = 3);
// The bucket size for gradients from the curve. With a spare core (overlap_possible: buckets are
// reduced on a communication thread while backward runs), the smallest size whose throughput is
// within 10% of the best: large enough to amortize latency, small enough to start early. Without
// one (each replica reduces its buckets itself, nothing overlaps), the size with the best
// throughput: smaller buckets would only add latency. Either way below the sizes where the
// transport's throughput collapses (Open MPI's does here above 16-32 MB: page faults).
int64_t choose_bucket_bytes(const std::vector<AllReducePoint>& curve, bool overlap_possible);

}  // namespace osprey::distribute
