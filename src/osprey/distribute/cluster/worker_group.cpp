#include "osprey/distribute/cluster/worker_group.h"

#include <map>
#include <mutex>

#include "osprey/comm/gloo.h"
#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"

namespace osprey::distribute {

namespace {

// Strategies made one after another in a process (a second model, another compression) share the
// process's Gloo group: rank 0's store owns the chief's port. The group lives until the process
// exits: were it closed when the last strategy goes, rank 0 would reopen the store on the same
// port for the next one while a faster rank 1 could still reach the closing one ("lost the
// rendezvous store"). Never destroyed, so no exit-time destructor races the store's thread.
std::shared_ptr<comm::GlooGroup> shared_gloo_group(const comm::GlooOptions& options,
                                                   const std::string& caller) {
  static std::mutex mutex;
  static auto* groups = new std::map<std::string, std::shared_ptr<comm::GlooGroup>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<comm::GlooGroup> g = (*groups)[options.rendezvous];
  if (!g) {
    g = std::make_shared<comm::GlooGroup>(options);
    (*groups)[options.rendezvous] = g;
  }
  OSPREY_CHECK(g->rank() == options.rank && g->size() == options.size,
               "{}: this process is already rank {} of {} at {}; it cannot also be rank {} of {}",
               caller, g->rank(), g->size(), options.rendezvous, options.rank, options.size);
  return g;
}

}  // namespace

std::string to_string(Communication communication) {
  switch (communication) {
    case Communication::mpi:
      return "mpi";
    case Communication::gloo:
      return "gloo";
    case Communication::automatic:
      break;
  }
  return "auto";
}

Communication parse_communication(const std::string& name, const std::string& where) {
  if (name == "auto") return Communication::automatic;
  if (name == "mpi") return Communication::mpi;
  if (name == "gloo") return Communication::gloo;
  OSPREY_THROW(ValueError, "{}: communication must be auto, mpi or gloo. Received: '{}'", where,
               name);
}

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
  g->timeout_ = options.timeout;
  if (g->size_ == 1) return g;
  const bool from_config = cluster.source() == "OSPREY_CONFIG" || cluster.source() == "TF_CONFIG";
  Communication backend = options.communication;
  if (backend == Communication::automatic) {
    backend = from_config && !comm::mpi_launched() ? Communication::gloo : Communication::mpi;
  }
  g->backend_ = to_string(backend);
  if (backend == Communication::mpi) {
    const auto mpi = [&](const char* name, bool check_calls) {
      return comm::make_mpi_communicator(
          {.check_calls = check_calls, .timeout = options.timeout, .name = name});
    };
    g->gradients_ = mpi("gradients", false);
    g->layers_ = mpi("layers", true);
    g->outputs_ = mpi("outputs", true);
    OSPREY_CHECK_T(
        DistributedError, g->gradients_->size() == g->size_ && g->gradients_->rank() == g->rank_,
        "{}: MPI says rank {} of {}, but the cluster ({}) says worker {} of {}", caller,
        g->gradients_->rank(), g->gradients_->size(), cluster.source(), g->rank_, g->size_);
    return g;
  }
  OSPREY_CHECK(!cluster.chief_address().empty(),
               "{}: Gloo needs the chief's address for its rendezvous, and the cluster from {} "
               "names none (set OSPREY_CONFIG or TF_CONFIG)",
               caller, cluster.source());
  g->gloo_ = shared_gloo_group({.rank = g->rank_,
                                .size = g->size_,
                                .rendezvous = cluster.chief_address(),
                                .hostname = "",
                                .timeout = options.timeout,
                                .check_calls = true},
                               caller);
  g->gradients_ = g->gloo_->make_communicator("gradients", false);
  g->layers_ = g->gloo_->make_communicator("layers");
  g->outputs_ = g->gloo_->make_communicator("outputs");
  return g;
}

std::unique_ptr<comm::Communicator> WorkerGroup::make_communicator(const std::string& name) const {
  if (size_ == 1) return nullptr;
  if (backend_ == "mpi")
    return comm::make_mpi_communicator({.check_calls = true, .timeout = timeout_, .name = name});
  return gloo_->make_communicator(name);
}

WorkerGroup::~WorkerGroup() = default;

}  // namespace osprey::distribute
