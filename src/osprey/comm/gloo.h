// The Gloo backend of Communicator (PyTorch's and Horovod's CPU collectives): for jobs whose
// processes are started host by host with a cluster spec (OSPREY_CONFIG / TF_CONFIG) rather than
// by mpirun. Rank 0 serves the rendezvous store (tcp_store.h) at the address every rank is given;
// each communicator is its own Gloo context (a full mesh of TCP connections) under its own name,
// so collectives of different communicators never mix. Every collective has a deadline; a peer
// that dies or stalls becomes a DistributedError naming its rank, never a hang. Built without
// Gloo, GlooGroup throws NotImplementedError.
//   GlooGroup group({.rank = r, .size = 2, .rendezvous = "10.0.0.1:29500"});
//   auto grads = group.make_communicator("gradients");
//   grads->all_reduce(data, n, ReduceOp::mean);
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "osprey/comm/communicator.h"

namespace osprey::comm {

struct GlooOptions {
  int rank = 0;
  int size = 1;
  // host:port where rank 0 serves the rendezvous store (the chief's address in the cluster spec).
  // Port 0 on rank 0: a free port the kernel picks; rendezvous() then says which, for the caller
  // to hand to the other ranks (process_group.cpp does, over MPI).
  std::string rendezvous;
  // Interface this rank's connections bind to; empty: the host part of `rendezvous` on rank 0,
  // else the address of the interface that routes to it.
  std::string hostname;
  // Deadline of every collective and of the rendezvous.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // As MpiOptions::check_calls.
  bool check_calls = true;
};

// Whether this build has Gloo (OSPREY_WITH_GLOO).
bool gloo_built() noexcept;

class GlooGroup {
 public:
  // Rank 0 starts the store; every rank connects to it (waiting up to the timeout for rank 0).
  explicit GlooGroup(GlooOptions options);
  ~GlooGroup();
  GlooGroup(const GlooGroup&) = delete;
  GlooGroup& operator=(const GlooGroup&) = delete;

  int rank() const noexcept { return options_.rank; }
  int size() const noexcept { return options_.size; }
  // host:port of the store, with the port rank 0's store took when it was given port 0.
  const std::string& rendezvous() const noexcept { return options_.rendezvous; }
  // A new communicator; every rank must make the same calls in the same order (the store keys are
  // the name and the call's sequence number, so a name may be used again). It must not outlive
  // the group.
  // check_calls: as GlooOptions::check_calls (the group's default when unset).
  std::unique_ptr<Communicator> make_communicator(const std::string& name,
                                                  std::optional<bool> check_calls = {});

  struct Impl;

 private:
  GlooOptions options_;
  std::unique_ptr<Impl> impl_;
  int made_ = 0;  // communicators made so far
};

}  // namespace osprey::comm
