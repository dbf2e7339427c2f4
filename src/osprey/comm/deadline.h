// Deadlines of cross-process calls, and the error that names who is to blame when one passes.
// Every MPI and Gloo collective, point-to-point call and communicator creation has a deadline
// (GlooOptions / MpiOptions::timeout, 5 minutes by default, `osprey train --timeout`). When it
// passes, the rank asks its peers which of them are alive and where they wait (a liveness survey:
// MPI messages on a communicator of their own, Gloo keys in the rendezvous store); peers that
// answer within the grace period are waiting too, those that do not are stopped, hung, or
// computing outside any collective, and the DistributedError names them:
//   MPI all_reduce on 'layers' passed its deadline of 3000 ms on rank 0 of 3: rank 2 did not
//   respond (stopped, hung, or busy outside any collective); rank 1 is waiting in all_reduce on
//   'layers' (call 57)
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>

namespace osprey::comm {

using DeadlineClock = std::chrono::steady_clock;

// What a survey learned about one peer (the caller's own entry is ignored).
struct PeerState {
  enum class Kind : uint8_t { silent, waiting, gone };
  Kind kind = Kind::silent;
  std::string where;  // for waiting: the call it waits in, as that peer described it
};

// How long a survey waits for peers to answer after the deadline: long enough for alive peers
// that entered the same call a little later to reach their own deadline, at most 15 s.
std::chrono::milliseconds liveness_grace(std::chrono::milliseconds timeout);

// "all_reduce on 'layers' (call 57)": what a rank says it is waiting in.
std::string describe_call(std::string_view call, std::string_view communicator, int64_t sequence);

// The DistributedError message of a call that passed its deadline (timed_out) or failed another
// way (a closed connection), from the survey's peer states (indexed by rank; peers[rank] is the
// caller and ignored).
std::string describe_failure(std::string_view backend, std::string_view where, int rank,
                             std::chrono::milliseconds timeout, std::span<const PeerState> peers,
                             bool timed_out = true);

}  // namespace osprey::comm
