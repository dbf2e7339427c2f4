// `osprey ps --listen HOST:PORT [--checkpoint-dir D] [--checkpoint-every S] [--max-message-mb N]`:
// a parameter server (distribute/ps/ps_server.h) for ParameterServerStrategy. It serves until
// SIGTERM or SIGINT, then stops taking calls and writes a last checkpoint when it has a
// directory. The shared token comes from OSPREY_PS_TOKEN, never from the command line (where
// `ps` would show it). Once listening it prints "osprey ps: serving ..." on stderr: launchers and
// tests wait for that line.
#include <fcntl.h>
#include <fmt/format.h>
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

// The stop signals reach whichever thread the kernel picks (gRPC's, the thread pool's, ...): the
// handler only writes the signal's number to a pipe, and the main thread, reading it, shuts down
// outside any handler.
int g_stop_pipe[2] = {-1, -1};

void on_ps_stop_signal(int sig) {
  const auto c = static_cast<char>(sig);
  [[maybe_unused]] const ssize_t n = write(g_stop_pipe[1], &c, 1);
}

int wait_for_stop_signal() {
  char c = 0;
  while (read(g_stop_pipe[0], &c, 1) < 0 && errno == EINTR) {
  }
  return c;
}

void install_stop_handlers() {
  if (pipe2(g_stop_pipe, O_CLOEXEC) != 0) {
    OSPREY_THROW(Error, "osprey ps: cannot create a pipe: {}", std::strerror(errno));
  }
  struct sigaction sa {};
  sa.sa_handler = on_ps_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

bool is_loopback(const std::string& address) {
  const std::string host = address.substr(0, address.rfind(':'));
  return host == "localhost" || host.starts_with("127.") || host == "[::1]";
}

void run_ps(const PsArgs& args) {
  OSPREY_CHECK_T(cli::UsageError, args.max_message_mb <= (int64_t{1} << 11),
                 "--max-message-mb: must be at most 2048 (gRPC's limit is 2 GiB). Received: {}",
                 args.max_message_mb);
  install_stop_handlers();  // before the server: a signal while it restores is not lost
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
