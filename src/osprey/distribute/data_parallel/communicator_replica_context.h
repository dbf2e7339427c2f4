// CommunicatorReplicaContext: the nn::ReplicaContext a data-parallel strategy installs on each
// replica's thread during a train step (synchronized BatchNormalization all-reduces through it),
// over that replica's rank of a Communicator kept for layer collectives only, so they never
// interleave with the gradient reducer's bucket all-reduces, which run on their own thread.
//   CommunicatorReplicaContext ctx(layer_group.rank(r));
//   nn::ReplicaContextGuard guard(&ctx);               // on replica r's thread, for the step
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "osprey/comm/communicator.h"
#include "osprey/comm/in_process.h"
#include "osprey/distribute/data_parallel/replicas.h"
#include "osprey/nn/replica_context.h"

namespace osprey::distribute {

class CommunicatorReplicaContext final : public nn::ReplicaContext {
 public:
  explicit CommunicatorReplicaContext(comm::Communicator& comm) : comm_(comm) {}
  int num_replicas() const noexcept override { return comm_.size(); }
  int replica_id() const noexcept override { return comm_.rank(); }
  // float32: the communicator's all-reduce. float64 (the communicator moves floats): every
  // replica's bytes are all-gathered and summed here in rank order, exact and the same everywhere.
  void all_reduce_sum(Tensor& t) override;

 private:
  comm::Communicator& comm_;
  std::vector<float> gathered_;  // reused: no allocation once it has grown
};

// One context per replica of an in-process strategy, on a group of their own (layers'
// collectives must not interleave with the gradient reducer's); null for a single replica, so
// synchronized layers act locally there.
class InProcessReplicaContexts {
 public:
  explicit InProcessReplicaContexts(int replicas);
  nn::ReplicaContext* get(int r) const {
    return contexts_.empty() ? nullptr : contexts_[static_cast<size_t>(r)].get();
  }
  comm::InProcessGroup& group() noexcept { return group_; }

 private:
  comm::InProcessGroup group_;
  std::vector<std::unique_ptr<CommunicatorReplicaContext>> contexts_;  // use group_'s ranks
};

// What keeps a failed replica from hanging the others: a replica that throws between two
// collectives (a layer's all-reduce, a gradient bucket) leaves the rest waiting for it forever.
// fail(r) records replica r's exception (the first failure of the step wins) and aborts the
// groups, so every replica blocked in or entering one of their collectives throws instead; run()
// then rethrows that first failure, not the aborts it caused, and resets the groups for the next
// step.
//   CollectiveAbort abort({&group, &contexts.group()});
//   abort.run(replicas, [&](int r) { ... });
class CollectiveAbort {
 public:
  explicit CollectiveAbort(std::vector<comm::InProcessGroup*> groups)
      : groups_(std::move(groups)) {}
  // Inside a catch block of replica r.
  void fail(int r) noexcept;
  void run(const Replicas& replicas, const std::function<void(int)>& fn);
  // The same over the devices of a ReplicaWorkers (ModelParallel's mesh devices).
  void run(ReplicaWorkers& workers, const std::function<void(int)>& fn);

 private:
  // Runs fn on every replica through `launch` (which calls its argument for each replica).
  void run_each(const std::function<void(const std::function<void(int)>&)>& launch,
                const std::function<void(int)>& fn);
  std::vector<comm::InProcessGroup*> groups_;
  std::mutex mutex_;
  std::exception_ptr first_;
};

}  // namespace osprey::distribute
