// HierarchicalCommunicator: one replica's view of a group that spans processes, each running
// several in-process replicas (MultiWorkerMirroredStrategy's replicas per worker x workers).
// A collective runs in three stages: the replicas of a process combine over the in-process group,
// replica 0 of each process combines across processes (MPI or Gloo, optionally bf16 on the wire),
// and an in-process broadcast hands the result back: the cross-process traffic is one buffer per
// process, not per replica (Horovod's hierarchical all-reduce). Global rank = worker * local size
// + local rank. Point-to-point calls are not offered here (NotImplementedError naming them).
//   HierarchicalCommunicator h(local_group.rank(r), r == 0 ? cross.get() : nullptr, worker,
//   workers, bf16); h.all_reduce(grad, n, ReduceOp::mean);     // mean over every replica of every
//   worker
#pragma once

#include <vector>

#include "osprey/comm/communicator.h"

namespace osprey::comm {

class HierarchicalCommunicator final : public Communicator {
 public:
  // `cross` is the process-level communicator, used by local rank 0 only (null elsewhere, and
  // may be null when workers == 1); `compress`: cross-process all-reduces in bf16.
  HierarchicalCommunicator(Communicator& local, Communicator* cross, int worker, int workers,
                           bool compress);

  int rank() const noexcept override { return worker_ * local_.size() + local_.rank(); }
  int size() const noexcept override { return workers_ * local_.size(); }

  void all_reduce(float* data, int64_t count, ReduceOp op) override;
  void all_reduce_bf16(float* data, int64_t count, ReduceOp op) override;
  void reduce_scatter(const float* send, float* recv, int64_t recv_count, ReduceOp op) override;
  void all_gather(const float* send, float* recv, int64_t send_count) override;
  void broadcast(float* data, int64_t count, int root) override;
  void barrier() override;
  void send(const float* data, int64_t count, int destination, int tag) override;
  void recv(float* data, int64_t count, int source, int tag) override;

 private:
  bool leads() const noexcept { return local_.rank() == 0 && workers_ > 1; }
  void reduce(float* data, int64_t count, ReduceOp op, bool compress);

  Communicator& local_;
  Communicator* cross_;
  int worker_, workers_;
  bool compress_;
  std::vector<float> scratch_;  // reduce_scatter and all_gather staging, grown once
};

}  // namespace osprey::comm
