// Distributed tuning (seed 002, KerasTuner's distributed mode): the chief serves its Oracle over
// gRPC (oracle.proto) and tuner workers, each its own process, ask it for trials. The same Tuner
// code runs as either, configured by the environment (tuner_role_from_env):
//   OSPREY_TUNER_ID=chief OSPREY_ORACLE_IP=127.0.0.1 OSPREY_ORACLE_PORT=8000 ./tune   # serves
//   OSPREY_TUNER_ID=tuner0 OSPREY_ORACLE_IP=127.0.0.1 OSPREY_ORACLE_PORT=8000 ./tune  # trains
// (KERASTUNER_TUNER_ID, KERASTUNER_ORACLE_IP and KERASTUNER_ORACLE_PORT are read too), or all of
// it at once by `osprey launch --tuners N -- ./tune`.
// What KerasTuner lacks, and this adds:
//  - Leases: a running trial belongs to the tuner that took it while that tuner heartbeats
//    (every lease_seconds / 4, from a thread of its own, so a long epoch does not lose it).
//    A tuner silent for lease_seconds loses the trial: it goes back in line, keeping the epochs it
//    reported, and the next tuner to ask resumes it from its last epoch backup. A call about a
//    trial the tuner lost is refused (TrialLost), so two tuners never report for one trial.
//  - The chief restarts from its directory (oracle.json, trial files): trials running when it
//    died are leased anew to whoever still holds them, and workers retry their calls with
//    backoff for reconnect_seconds, so they carry on once it is back.
//  - A tuner that asks for a trial while holding one (it restarted with the same id) gets that
//    trial back to resume, not a second one.
//  - The same security defaults as the parameter servers (ps/internal/rpc.h): the chief binds
//    only the address given, checks OSPREY_ORACLE_TOKEN on every call when set, and bounds
//    message sizes.
// A build without gRPC throws NotImplementedError from the server and the client.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "osprey/core/error.h"
#include "osprey/tune/oracle.h"

namespace osprey::tune {

// The exit code of a tuner worker process that ran its share of trials
// (OSPREY_TUNER_TRIALS_PER_PROCESS) while the study goes on: `osprey launch --tuners` starts a
// fresh process in its place. (EX_TEMPFAIL: "try again".)
inline constexpr int kExitNextTrial = 75;

// A worker's call about a trial it no longer holds: its lease ran out and the trial went back in
// line (or to another tuner). The tuner drops the trial and asks for the next one.
class TrialLost : public Error {
 public:
  using Error::Error;
};

// Who this process is in a distributed study, from the environment. Not distributed when no
// oracle address is set.
struct TunerRole {
  std::string tuner_id;        // "chief", or a worker's id ("tuner0")
  std::string oracle_address;  // "IP:PORT"; empty: not distributed
  std::string token;           // OSPREY_ORACLE_TOKEN
  bool distributed() const { return !oracle_address.empty(); }
  bool is_chief() const { return distributed() && tuner_id == "chief"; }
  bool is_worker() const { return distributed() && tuner_id != "chief"; }
};
// OSPREY_TUNER_ID, OSPREY_ORACLE_IP, OSPREY_ORACLE_PORT (each falling back to its KERASTUNER_
// name) and OSPREY_ORACLE_TOKEN. ValueError naming the variable when only one of IP and PORT is
// set, the port is not a number in 1-65535, or the id is missing while an address is set.
TunerRole tuner_role_from_env();

struct OracleServiceOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0: any free one
  std::string token{};                 // empty: none required
  int64_t max_message_bytes = int64_t{16} << 20;
  double lease_seconds = 60;
  bool verbose = true;  // a line on stderr when a lease runs out
};

// What a chief serves with: its role's address and token, and OSPREY_ORACLE_LEASE_SECONDS when
// set (ValueError naming it unless a positive number).
OracleServiceOptions chief_service_options(const TunerRole& role, bool verbose);
// OSPREY_TUNER_RESTARTED=1: `osprey launch` restarted this chief after a failure, so it resumes
// its study directory even when the program asks to overwrite it.
bool restarted_by_launcher();

// Serves `oracle` (which must outlive the server). Every call runs under mutex(): whoever reads
// the oracle meanwhile (the chief printing progress) takes it too.
class OracleServer {
 public:
  // Called under mutex() with each trial as it ends (the chief prints a row).
  using EndCallback = std::function<void(const Trial&)>;
  OracleServer(Oracle& oracle, OracleServiceOptions options, EndCallback on_end = {});
  ~OracleServer();
  OracleServer(const OracleServer&) = delete;
  OracleServer& operator=(const OracleServer&) = delete;

  int port() const;
  std::string address() const;
  std::mutex& mutex();
  // Blocks until the study is over: the oracle has answered stopped and no trial runs. Then
  // keeps answering for a grace period (until every tuner that asked for trials was told to stop,
  // or went silent for a lease), so workers end cleanly instead of retrying a vanished chief.
  void wait_until_done();
  // Stops serving (calls in flight finish first). Safe to call twice.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct OracleClientOptions {
  std::string address;  // the chief's "IP:PORT"
  std::string tuner_id;
  std::string token{};
  int64_t max_message_bytes = int64_t{16} << 20;
  double call_timeout_seconds = 30;  // one attempt of one call
  double reconnect_seconds = 300;    // how long a call retries an unreachable chief
};

// An Oracle for a worker: create_trial, update_trial, end_trial, update_space and refresh go to
// the chief; the read-only view (trials(), get_best_trials, ...) is the chief's state as of the
// last refresh(). `local` is the oracle the worker's own code built (same class and options as
// the chief's): it names the search, and its state is never used.
std::unique_ptr<Oracle> connect_oracle(std::unique_ptr<Oracle> local, OracleClientOptions options);

}  // namespace osprey::tune
