#include "osprey/comm/process_group.h"

#include <map>
#include <mutex>

#include "osprey/comm/gloo.h"
#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"

namespace osprey::comm {

namespace {

// Groups made one after another in a process (a second model, another compression) share the
// process's Gloo group: rank 0's store owns the chief's port. The group lives until the process
// exits: were it closed when the last user goes, rank 0 would reopen the store on the same port
// for the next one while a faster rank 1 could still reach the closing one ("lost the rendezvous
// store"). Never destroyed, so no exit-time destructor races the store's thread.
std::shared_ptr<GlooGroup> shared_gloo_group(const GlooOptions& options,
                                             const std::string& caller) {
  static std::mutex mutex;
  static auto* groups = new std::map<std::string, std::shared_ptr<GlooGroup>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<GlooGroup> g = (*groups)[options.rendezvous];
  if (!g) {
    g = std::make_shared<GlooGroup>(options);
    (*groups)[options.rendezvous] = g;
  }
  OSPREY_CHECK(g->rank() == options.rank && g->size() == options.size,
               "{}: this process is already rank {} of {} at {}; it cannot also be rank {} of {}",
               caller, g->rank(), g->size(), options.rendezvous, options.rank, options.size);
  return g;
}

}  // namespace

std::string to_string(Backend backend) {
  switch (backend) {
    case Backend::mpi:
      return "mpi";
    case Backend::gloo:
      return "gloo";
    case Backend::automatic:
      break;
  }
  return "auto";
}

Backend parse_backend(const std::string& name, const std::string& where) {
  if (name == "auto") return Backend::automatic;
  if (name == "mpi") return Backend::mpi;
  if (name == "gloo") return Backend::gloo;
  OSPREY_THROW(ValueError, "{}: communication must be auto, mpi or gloo. Received: '{}'", where,
               name);
}

Backend resolve_backend(Backend requested, bool has_rendezvous) {
  if (requested != Backend::automatic) return requested;
  return has_rendezvous && !mpi_launched() ? Backend::gloo : Backend::mpi;
}

std::shared_ptr<ProcessGroup> ProcessGroup::connect(const ProcessGroupOptions& options) {
  OSPREY_CHECK(options.size >= 1 && options.rank >= 0 && options.rank < options.size,
               "{}: rank {} of {} is not a rank of the group", options.caller, options.rank,
               options.size);
  OSPREY_CHECK(options.timeout.count() > 0, "{}: timeout must be positive. Received: {} ms",
               options.caller, options.timeout.count());
  std::shared_ptr<ProcessGroup> g(new ProcessGroup());
  g->options_ = options;
  g->backend_ = resolve_backend(options.backend, !options.rendezvous.empty());
  if (g->backend_ == Backend::mpi) return g;
  OSPREY_CHECK(!options.rendezvous.empty(),
               "{}: Gloo needs a rendezvous address (the chief's, from OSPREY_CONFIG or "
               "TF_CONFIG), and none was given",
               options.caller);
  g->gloo_ = shared_gloo_group({.rank = options.rank,
                                .size = options.size,
                                .rendezvous = options.rendezvous,
                                .hostname = "",
                                .timeout = options.timeout,
                                .check_calls = true},
                               options.caller);
  return g;
}

ProcessGroup::~ProcessGroup() = default;

std::unique_ptr<Communicator> ProcessGroup::make_communicator(const std::string& name,
                                                              bool check_calls) const {
  if (backend_ == Backend::mpi) {
    auto c = make_mpi_communicator(
        {.check_calls = check_calls, .timeout = options_.timeout, .name = name});
    OSPREY_CHECK_T(DistributedError, c->size() == options_.size && c->rank() == options_.rank,
                   "{}: MPI says rank {} of {}, but the cluster says rank {} of {}",
                   options_.caller, c->rank(), c->size(), options_.rank, options_.size);
    return c;
  }
  return gloo_->make_communicator(name, check_calls);
}

}  // namespace osprey::comm
