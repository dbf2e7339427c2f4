// PsServer: a ParameterShard served over gRPC (ps.proto's ParameterServer service): what
// `osprey ps --listen HOST:PORT` runs, and what tests start in-process on a free port.
// Secure by default: it binds only the address given (loopback unless told otherwise), refuses
// calls without the token when one is set (OSPREY_PS_TOKEN), and refuses messages larger than
// max_message_bytes; a request naming an unknown variable or carrying a wrong shape gets a status
// that says which, and changes nothing.
//   PsServer server({.listen = "127.0.0.1:0", .checkpoint_dir = "/tmp/ps0"});
//   server.port();   // the port chosen
//   server.wait();   // until shutdown() (from another thread or a signal)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "osprey/distribute/ps/parameter_shard.h"

namespace osprey::distribute::ps {

struct PsServerOptions {
  std::string listen = "127.0.0.1:0";
  std::string checkpoint_dir{};  // empty: no checkpoints
  std::string token{};           // empty: none required
  int64_t max_message_bytes = int64_t{256} << 20;
  // Also on each Checkpoint call and at shutdown; 0: only then. A periodic checkpoint that fails
  // (disk full) is reported on stderr and retried next period: the shard keeps serving.
  double checkpoint_every_seconds = 0;
  std::string name = "ps";
};

class PsServer {
 public:
  // Starts serving (restoring the shard from checkpoint_dir first). Throws NotImplementedError
  // in a build without gRPC, DistributedError when the address cannot be bound.
  explicit PsServer(PsServerOptions options);
  ~PsServer();
  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;

  int port() const;
  std::string address() const;  // host:port actually bound
  void wait();                  // blocks until shutdown()
  // Stops accepting calls, finishes those in flight (for at most a few seconds), then writes a
  // last checkpoint when there is a directory and the shard changed since the last one. Safe to
  // call more than once and from any thread but a signal handler (the destructor calls it).
  void shutdown();
  // The shard it serves (thread-safe): what `osprey ps` reports after a restore.
  ParameterShard& shard();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace osprey::distribute::ps
