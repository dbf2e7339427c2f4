// MirroredStrategy: synchronous data parallelism on the devices of one process
// (tf.distribute.MirroredStrategy). Each device holds a replica of the model with its own copy
// of every variable and its own optimizer; a step splits the global batch evenly, runs forward
// and backward on every replica on its own persistent worker thread (a virtual device: its
// share of the thread pool, replica_workers.h), averages the gradients with an
// in-process all-reduce (fixed rank order: deterministic, bitwise equal on every replica),
// bucketed and overlapped with backward (on a communication thread when a core is free for it,
// else by each replica's thread in its backward), and applies the same update on every replica,
// so the copies never drift apart.
//   os::distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});   // {} = every local device
//   { auto scope = strategy.scope(); model.compile("sgd", "mse"); }
//   model.fit(x, y, {.batch_size = 64});                               // 32 rows per replica
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/distribute/data_parallel/gradient_reducer.h"
#include "osprey/distribute/strategy_base.h"

namespace osprey::distribute {

struct MirroredOptions {
  // Gradients are all-reduced in buckets of at most this many bytes (the first, holding the
  // last layers, at most first_bucket_bytes), in reverse creation order, each as soon as backward
  // has finished it (gradient_reducer.h).
  int64_t bucket_bytes = kDefaultBucketBytes;
  int64_t first_bucket_bytes = kDefaultFirstBucketBytes;
  // Where buckets are reduced; unset: on a communication thread when the replicas' threads leave
  // a core free for it, else on each replica's own thread (gradient_reducer.h).
  std::optional<ReduceOn> reduce_on = std::nullopt;
  // Threads each replica's kernels use (its virtual device's share of the pool); 0: num_threads()
  // divided by the replica count, at least 1, so 2 replicas on 2 cores run 1 thread each.
  int threads_per_replica = 0;
};

class MirroredStrategy final : public StrategyBase {
 public:
  explicit MirroredStrategy(const std::vector<std::string>& devices = {},
                            MirroredOptions options = {});
  const MirroredOptions& options() const noexcept { return options_; }
  std::string name() const override { return "MirroredStrategy"; }
  std::unique_ptr<train::StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override;
  std::shared_ptr<const train::Strategy> clone() const override {
    return std::make_shared<MirroredStrategy>(*this);
  }

  // The gradient reducers' timings summed over the replicas of every model this strategy (or a
  // copy of it) is training now, and the overlap ceiling of their buckets (gradient_reducer.h).
  //   auto st = strategy.reducer_stats();   // st.hidden(): fraction of reduction behind backward
  struct ReducerStats : GradientReducer::Stats {
    double ceiling = 0.0;
    int64_t buckets = 0;
  };
  ReducerStats reducer_stats() const;
  void reset_reducer_stats() const;
  struct Reducers;  // the executors' live reducers (mirrored_strategy.cpp)

 private:
  MirroredOptions options_;
  std::shared_ptr<Reducers> reducers_;  // shared by copies: the executors register theirs here
};

}  // namespace osprey::distribute
