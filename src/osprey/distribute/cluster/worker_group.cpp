#include "osprey/distribute/cluster/worker_group.h"

#include <cstdlib>

#include "osprey/core/error.h"

namespace osprey::distribute {

std::shared_ptr<WorkerGroup> WorkerGroup::connect(const ClusterResolver& cluster,
                                                  const WorkerGroupOptions& options) {
  const std::string& caller = options.caller;
  OSPREY_CHECK(cluster.in_collective_group(),
               "{}: task {}:{} ({}) is not a worker; only the chief and the workers join the "
               "all-reduce group",
               caller, cluster.task_type(), cluster.task_index(), cluster.source());
  OSPREY_CHECK(options.timeout.count() > 0, "{}: timeout must be positive. Received: {} ms", caller,
               options.timeout.count());
  std::shared_ptr<WorkerGroup> g(new WorkerGroup());
  g->rank_ = cluster.worker_rank();
  g->size_ = cluster.num_workers();
  if (g->size_ == 1) return g;
  const bool from_config = cluster.source() == "OSPREY_CONFIG" || cluster.source() == "TF_CONFIG";
  // Gloo's rendezvous: the chief's address from a config; else OSPREY_GLOO_RENDEZVOUS when set;
  // else, under mpirun, ProcessGroup finds one through MPI (or refuses, naming what to set).
  std::string rendezvous = cluster.chief_address();
  const char* explicit_rendezvous = std::getenv("OSPREY_GLOO_RENDEZVOUS");
  if (rendezvous.empty() && explicit_rendezvous != nullptr) rendezvous = explicit_rendezvous;
  g->group_ = comm::ProcessGroup::connect(
      {.backend = comm::resolve_backend(options.communication, from_config),
       .rank = g->rank_,
       .size = g->size_,
       .rendezvous = rendezvous,
       .timeout = options.timeout,
       .caller = caller});
  g->backend_ = comm::to_string(g->group_->backend());
  g->gradients_ = g->group_->make_communicator("gradients", false);
  g->layers_ = g->group_->make_communicator("layers");
  g->outputs_ = g->group_->make_communicator("outputs");
  return g;
}

std::unique_ptr<comm::Communicator> WorkerGroup::make_communicator(const std::string& name) const {
  if (size_ == 1) return nullptr;
  return group_->make_communicator(name);
}

WorkerGroup::~WorkerGroup() = default;

}  // namespace osprey::distribute
