// The processes of one job as a group, and the engine their collectives run on: Open MPI when
// mpirun or srun started them, Gloo when they were started host by host with a rendezvous address
// (OSPREY_CONFIG / TF_CONFIG's chief), or when asked for under mpirun (the rendezvous then goes
// through MPI, as Horovod's Gloo under mpirun). The choice lives here, beside the engines, so a
// strategy asks for a group and its communicators and never names MPI or Gloo itself.
//   auto group = comm::ProcessGroup::connect({.backend = comm::Backend::automatic, .rank = r,
//                                             .size = n, .rendezvous = "10.0.0.1:2222"});
//   auto gradients = group->make_communicator("gradients", /*check_calls=*/false);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "osprey/comm/communicator.h"

namespace osprey::comm {

class GlooGroup;

// tf.distribute's CommunicationImplementation. automatic: Open MPI when the job was launched by
// mpirun or srun (mpi_launched()), else Gloo when a rendezvous address is known, else Open MPI.
// Its name is "auto" (the one enumerator not spelled as its name: a keyword).
enum class Backend : uint8_t { automatic, mpi, gloo };
// "auto", "mpi" or "gloo": the names flags (--communication) and configs use.
std::string to_string(Backend backend);
// The inverse of to_string; a ValueError naming `where` (the flag or config field the name came
// from) and listing the valid names otherwise.
Backend parse_backend(const std::string& name, const std::string& where);
// The engine `requested` means for this process: mpi or gloo, never automatic.
Backend resolve_backend(Backend requested, bool has_rendezvous);

struct ProcessGroupOptions {
  Backend backend = Backend::automatic;
  int rank = 0;
  int size = 1;
  // host:port where rank 0 serves Gloo's rendezvous store. Empty under mpirun (mpi_launched()):
  // rank 0 serves it on a free loopback port and broadcasts the port over MPI, when every rank
  // runs on one host (ValueError naming OSPREY_GLOO_RENDEZVOUS otherwise).
  std::string rendezvous{};
  // Deadline of every collective, point-to-point call and rendezvous (deadline.h).
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // Who connects, named in every error ("MultiWorkerMirroredStrategy").
  std::string caller = "ProcessGroup";
};

class ProcessGroup {
 public:
  // Connects every process of the group (a collective: each must call it with its own rank).
  // ValueError naming the caller for Gloo without a rendezvous address outside mpirun, or a process
  // that is already another rank of a group at that address; DistributedError when MPI's ranks
  // disagree with rank/size; NotImplementedError when the build lacks the engine.
  static std::shared_ptr<ProcessGroup> connect(const ProcessGroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  Backend backend() const noexcept { return backend_; }  // mpi or gloo
  int rank() const noexcept { return options_.rank; }
  int size() const noexcept { return options_.size; }
  // A new communicator over every process of the group (a collective: every process makes the
  // same ones in the same order). check_calls: each call's descriptor is compared across the
  // processes first (call_check.h); off only for callers whose calls match by construction.
  std::unique_ptr<Communicator> make_communicator(const std::string& name,
                                                  bool check_calls = true) const;

 private:
  ProcessGroup() = default;
  ProcessGroupOptions options_;
  Backend backend_ = Backend::mpi;
  // One per process and rendezvous address (rank 0 serves the store there), shared by every
  // group of this process.
  std::shared_ptr<GlooGroup> gloo_;
};

}  // namespace osprey::comm
