#include "osprey/comm/process_group.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

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

// Host names travel one character per float (exact: 0..255), as a Communicator moves floats only;
// up to kHostChars of each.
constexpr int64_t kHostChars = 64;
std::string host_name() {
  std::array<char, HOST_NAME_MAX + 1> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "?";
  return {name.data()};
}

// Gloo under mpirun (or srun with PMIx) with no rendezvous address: it goes through MPI, as
// Horovod's Gloo under mpirun does. Rank 0 serves the store on a free loopback port and broadcasts
// the port; every rank connects there. Loopback reaches only rank 0's host, so ranks on several
// hosts are refused (every rank sees the same host names, so every rank throws the same error).
std::shared_ptr<GlooGroup> gloo_group_through_mpi(const ProcessGroupOptions& options) {
  const std::string caller = options.caller;
  auto world = make_mpi_communicator(
      {.check_calls = true, .timeout = options.timeout, .name = "gloo rendezvous"});
  OSPREY_CHECK_T(DistributedError, world->size() == options.size && world->rank() == options.rank,
                 "{}: MPI says rank {} of {}, but the cluster says rank {} of {}", caller,
                 world->rank(), world->size(), options.rank, options.size);
  const std::string mine = host_name().substr(0, kHostChars);
  std::vector<float> chars(kHostChars, 0.0F), all(static_cast<size_t>(kHostChars * options.size));
  std::transform(mine.begin(), mine.end(), chars.begin(),
                 [](char c) { return static_cast<float>(static_cast<unsigned char>(c)); });
  world->all_gather(chars.data(), all.data(), kHostChars);
  std::vector<std::string> hosts;
  for (int r = 0; r < options.size; ++r) {
    std::string h;
    for (int64_t i = 0; i < kHostChars; ++i) {
      const float c = all[static_cast<size_t>(r * kHostChars + i)];
      if (c == 0.0F) break;
      h.push_back(static_cast<char>(static_cast<unsigned char>(c)));
    }
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  }
  OSPREY_CHECK(hosts.size() == 1,
               "{}: Gloo under mpirun finds its rendezvous through MPI on one host only, and the "
               "ranks run on {} hosts ({}). Set OSPREY_GLOO_RENDEZVOUS=host:port (an address of "
               "rank 0's host, {}, that every host reaches, and a free port), or use "
               "--communication mpi",
               caller, hosts.size(), fmt::join(hosts, ", "), hosts.front());
  GlooOptions gloo{.rank = options.rank,
                   .size = options.size,
                   .rendezvous = "127.0.0.1:0",
                   .hostname = "127.0.0.1",
                   .timeout = options.timeout,
                   .check_calls = true};
  std::shared_ptr<GlooGroup> g;
  float port = 0.0F;  // 0: rank 0 could not start the store (its error follows on rank 0)
  std::exception_ptr failed;
  if (options.rank == 0) {
    try {
      g = std::make_shared<GlooGroup>(gloo);
      port = static_cast<float>(std::stoi(g->rendezvous().substr(g->rendezvous().rfind(':') + 1)));
    } catch (...) {
      failed = std::current_exception();
    }
  }
  world->broadcast(&port, 1, 0);
  if (failed) std::rethrow_exception(failed);
  OSPREY_CHECK_T(DistributedError, port > 0.0F,
                 "{}: rank 0 could not start Gloo's rendezvous store (its error says why)", caller);
  if (options.rank != 0) {
    gloo.rendezvous = "127.0.0.1:" + std::to_string(static_cast<int>(port));
    g = std::make_shared<GlooGroup>(gloo);
  }
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
  if (options.rendezvous.empty()) {
    OSPREY_CHECK(mpi_launched() && mpi_built(),
                 "{}: Gloo needs a rendezvous address, and none was given: set OSPREY_CONFIG or "
                 "TF_CONFIG (the chief's host:port) or OSPREY_GLOO_RENDEZVOUS=host:port, or start "
                 "the job with mpirun (osprey launch) so the address goes through MPI",
                 options.caller);
    // Once per process, as shared_gloo_group: every later group of this process shares it.
    static std::mutex mutex;
    static auto* through_mpi = new std::shared_ptr<GlooGroup>();
    std::lock_guard<std::mutex> lock(mutex);
    if (!*through_mpi) *through_mpi = gloo_group_through_mpi(options);
    g->gloo_ = *through_mpi;
    OSPREY_CHECK(g->gloo_->rank() == options.rank && g->gloo_->size() == options.size,
                 "{}: this process is already rank {} of {} through MPI; it cannot also be rank "
                 "{} of {}",
                 options.caller, g->gloo_->rank(), g->gloo_->size(), options.rank, options.size);
    return g;
  }
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
