// The Open MPI backend of Communicator: collectives across the processes of a job started by
// mpirun or Slurm's srun. MPI is initialized on first use (MPI_THREAD_MULTIPLE: the gradient
// reducer, layer collectives and the trainer call from different threads, each on its own
// communicator) and finalized at exit after the last communicator is gone. Each communicator is
// its own MPI_Comm_dup of MPI_COMM_WORLD, so collectives on different communicators never match
// each other. Every call has a deadline (deadline.h): collectives run nonblocking and are polled
// against it, and a peer that stops or hangs becomes a DistributedError naming it, never a hang.
// A process whose call timed out does not call MPI_Finalize (it would wait for the stalled peer);
// mpirun then ends the job. Built without MPI, every call throws NotImplementedError.
//   auto world = comm::make_mpi_communicator();         // rank/size of MPI_COMM_WORLD
//   world->all_reduce(grads.data(), n, ReduceOp::mean);
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "osprey/comm/communicator.h"

namespace osprey::comm {

struct MpiOptions {
  // Exchange each call's descriptor (call_check.h) before the data, so a mismatch between ranks
  // is a ValueError on every rank rather than a hang inside MPI. Costs one 32-byte all-gather per
  // collective (bench/bench_allreduce.cpp measures it); turn it off only for code whose calls match
  // by construction.
  bool check_calls = true;
  // Deadline of every call, and of creating the communicator (a collective over every process).
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // Names the communicator in errors ("all_reduce on 'gradients' (call 12)").
  std::string name = "world";
};

// Whether this build has MPI (OSPREY_WITH_MPI).
bool mpi_built() noexcept;
// Whether this process was started by an MPI launcher (mpirun, or srun with PMIx/PMI2).
bool mpi_launched() noexcept;
// A new communicator over every process of the job.
std::unique_ptr<Communicator> make_mpi_communicator(MpiOptions options = {});
// Ends the whole job with `code` when MPI is initialized and has more than one process (a rank
// that fails alone would otherwise leave the others waiting in a collective, and MPI_Finalize
// waits for them); does nothing otherwise. `osprey` calls it on a fatal error.
void mpi_abort_if_running(int code) noexcept;

}  // namespace osprey::comm
