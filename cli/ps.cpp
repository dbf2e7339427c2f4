// `osprey ps --listen HOST:PORT [--checkpoint-dir D] [--checkpoint-every S] [--max-message-mb N]`:
// a parameter server (distribute/ps/ps_server.h) for ParameterServerStrategy. It serves until
// SIGTERM or SIGINT, then stops taking calls and writes a last checkpoint when it has a
// directory. The shared token comes from OSPREY_PS_TOKEN, never from the command line (where
// `ps` would show it). Once listening it prints "osprey ps: serving ..." on stderr: launchers and
// tests wait for that line.
#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/distribute/ps/ps_server.h"

namespace osprey::cli {

namespace {

struct PsArgs {
  std::string listen;
  std::string checkpoint_dir;
  double checkpoint_every = 0;
  int64_t max_message_mb = 256;
};

// The stop signals are blocked in every thread (gRPC's threads, started after this, inherit the
// mask) and taken by the main thread with sigwait, outside any handler. A handler that wrote to a
// pipe the main thread read did the same, but a signal can land in any thread, and under
// ThreadSanitizer one that landed in the reading thread waited for that thread's next
// intercepted call, which never came: the ps did not stop.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

void block_stop_signals() {
  const sigset_t set = stop_signals();
  if (const int e = pthread_sigmask(SIG_BLOCK, &set, nullptr); e != 0) {
    OSPREY_THROW(Error, "osprey ps: cannot block SIGTERM and SIGINT: {}", std::strerror(e));
  }
}

int wait_for_stop_signal() {
  const sigset_t set = stop_signals();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

bool is_loopback(const std::string& address) {
  const std::string host = address.substr(0, address.rfind(':'));
  return host == "localhost" || host.starts_with("127.") || host == "[::1]";
}

void run_ps(const PsArgs& args) {
  OSPREY_CHECK_T(
      cli::UsageError, args.max_message_mb <= (int64_t{1} << 11),
      "osprey ps: --max-message-mb: must be at most 2048 (gRPC's limit is 2 GiB). Received: {}",
      args.max_message_mb);
  block_stop_signals();  // before the server starts its threads; a signal while it restores waits
  const char* token = std::getenv("OSPREY_PS_TOKEN");
  auto server = as_usage_error([&] {  // a bad address or option combination: usage
    return std::make_unique<distribute::ps::PsServer>(
        distribute::ps::PsServerOptions{.listen = args.listen,
                                        .checkpoint_dir = args.checkpoint_dir,
                                        .token = token != nullptr ? token : "",
                                        .max_message_bytes = args.max_message_mb << 20,
                                        .checkpoint_every_seconds = args.checkpoint_every,
                                        .name = "ps"});
  });
  const distribute::ps::ShardStats restored = server->shard().stats(false);
  if (server->shard().registered()) {
    fmt::print(stderr, "osprey ps: restored version {}: {} variables ({} parameters) from {}\n",
               restored.version, restored.variables, restored.parameters, args.checkpoint_dir);
  }
  if ((token == nullptr || *token == '\0') && !is_loopback(args.listen)) {
    fmt::print(stderr,
               "osprey ps: warning: {} is reachable from other hosts and no OSPREY_PS_TOKEN is "
               "set: anyone who can connect can change the model\n",
               args.listen);
  }
  fmt::print(stderr, "osprey ps: serving {} variables on {}\n", restored.variables,
             server->address());
  std::fflush(stderr);

  const int sig = wait_for_stop_signal();
  fmt::print(stderr, "osprey ps: {}: shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  server->shutdown();  // finishes the calls in flight, then the last checkpoint
  if (!args.checkpoint_dir.empty() && server->shard().registered()) {
    fmt::print(stderr, "osprey ps: checkpoint of version {} in {}\n", server->shard().version(),
               args.checkpoint_dir);
  }
}

}  // namespace

void add_ps(CLI::App& app) {
  auto args = std::make_shared<PsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "ps",
      "Run a parameter server for ParameterServerStrategy: a shard of the model's variables and "
      "their optimizer (set OSPREY_PS_TOKEN to require a shared token)");
  cmd->add_option("--listen", args->listen,
                  "HOST:PORT to serve on: 127.0.0.1:PORT for this machine only, a host's own "
                  "address for the cluster (port 0: any free port)")
      ->required();
  cmd->add_option("--checkpoint-dir", args->checkpoint_dir,
                  "Save the shard here (on request, periodically and at exit) and restore it "
                  "from here when starting");
  cmd->add_option("--checkpoint-every", args->checkpoint_every,
                  "Seconds between checkpoints while the shard changes (0: only on request and at "
                  "exit); needs --checkpoint-dir")
      ->check(kNonNegative);
  cmd->add_option("--max-message-mb", args->max_message_mb,
                  "Largest message accepted or sent, in MiB")
      ->check(kPositive);
  cmd->callback([args] { run_ps(*args); });
}

}  // namespace osprey::cli
