// WorkerGroup: this process's place among the workers of a multi-worker job and the
// cross-process communicators its strategy uses, one per purpose (gradients, layers' collectives,
// step outputs), so collectives issued from different threads never interleave. The backend
// follows how the job was started: Open MPI under mpirun or srun, Gloo when the processes were
// started host by host with OSPREY_CONFIG / TF_CONFIG (rendezvous at the chief's address). Gloo
// asked for under mpirun meets at OSPREY_GLOO_RENDEZVOUS (host:port) when set, else through MPI
// on one host (comm/process_group.h).
//   auto cluster = ClusterResolver::from_environment();
//   auto group = WorkerGroup::connect(cluster, {});        // every worker, collectively
//   group->gradients()->all_reduce(...);                   // null on a single worker
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "osprey/comm/communicator.h"
#include "osprey/comm/process_group.h"
#include "osprey/distribute/cluster/cluster_resolver.h"

namespace osprey::distribute {

// How the workers talk (tf.distribute's CommunicationImplementation): comm::Backend, whose
// automatic choice (Open MPI when launched by mpirun or srun, Gloo when the cluster came from a
// config) comm/process_group.h makes; nothing at all for a single worker.
using Communication = comm::Backend;
using comm::to_string;
inline Communication parse_communication(const std::string& name, const std::string& where) {
  return comm::parse_backend(name, where);
}

struct WorkerGroupOptions {
  // Who connects, named in every error: the strategy ("MultiWorkerMirroredStrategy",
  // "ModelParallel", "PipelineParallel"), since they all share this group.
  std::string caller = "WorkerGroup";
  Communication communication = Communication::automatic;
  // Deadline of every collective, point-to-point call and rendezvous (comm/deadline.h).
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

class WorkerGroup {
 public:
  // Connects every worker of the cluster (a collective: every worker must call it). ValueError
  // (naming options.caller) for a task outside the all-reduce group (ps, evaluator);
  // NotImplementedError when the build lacks the backend the job needs.
  static std::shared_ptr<WorkerGroup> connect(const ClusterResolver& cluster,
                                              const WorkerGroupOptions& options);
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  const std::string& backend() const noexcept { return backend_; }  // "mpi", "gloo" or "none"
  // Null when size() == 1. gradients() skips the per-call descriptor check (comm/call_check.h):
  // its only callers issue the same calls on every worker by construction (the all-reduce curve,
  // and gradient buckets laid out from a model verified alike on every worker at the first step,
  // verify_same_model); the others keep it.
  comm::Communicator* gradients() const noexcept { return gradients_.get(); }
  comm::Communicator* layers() const noexcept { return layers_.get(); }
  comm::Communicator* outputs() const noexcept { return outputs_.get(); }
  // A further communicator over every worker, on the group's backend, for a strategy that needs
  // one per thread (ModelParallel: one per local mesh device and axis). A collective: every
  // worker must make the same ones in the same order. Null when size() == 1.
  std::unique_ptr<comm::Communicator> make_communicator(const std::string& name) const;

 private:
  WorkerGroup() = default;
  int rank_ = 0, size_ = 1;
  std::string backend_ = "none";
  // Declared first: destroyed after its communicators.
  std::shared_ptr<comm::ProcessGroup> group_;
  std::unique_ptr<comm::Communicator> gradients_, layers_, outputs_;
};

}  // namespace osprey::distribute
