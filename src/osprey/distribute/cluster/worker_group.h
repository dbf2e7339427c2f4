// WorkerGroup: this process's place among the workers of a multi-worker job and the
// cross-process communicators its strategy uses, one per purpose (gradients, layers' collectives,
// step outputs), so collectives issued from different threads never interleave. The backend
// follows how the job was started: Open MPI under mpirun or srun, Gloo when the processes were
// started host by host with OSPREY_CONFIG / TF_CONFIG (rendezvous at the chief's address).
//   auto cluster = ClusterResolver::from_environment();
//   auto group = WorkerGroup::connect(cluster, {});        // every worker, collectively
//   group->gradients()->all_reduce(...);                   // null on a single worker
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "osprey/comm/communicator.h"
#include "osprey/distribute/cluster/cluster_resolver.h"

namespace osprey::comm {
class GlooGroup;
}

namespace osprey::distribute {

// How the workers talk (tf.distribute's CommunicationImplementation). automatic: Open MPI when
// the job was launched by mpirun or srun, Gloo when the cluster came from a config, nothing for
// a single worker. Its name is "auto" (the one enumerator not spelled as its name: a keyword).
enum class Communication : uint8_t { automatic, mpi, gloo };
// "auto", "mpi" or "gloo": the names flags (--communication) and configs use.
std::string to_string(Communication communication);
// The inverse of to_string; a ValueError naming `where` (the flag or config field the name came
// from) and listing the valid names otherwise.
Communication parse_communication(const std::string& name, const std::string& where);

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
  std::chrono::milliseconds timeout_{};
  // Declared first: destroyed after its communicators. One per process and rendezvous address
  // (rank 0 serves the store there), shared by every WorkerGroup of this process.
  std::shared_ptr<comm::GlooGroup> gloo_;
  std::unique_ptr<comm::Communicator> gradients_, layers_, outputs_;
};

}  // namespace osprey::distribute
