// `osprey launch-worker DIR -- PROGRAM ARGS...` (hidden): what `osprey launch` runs under a local
// mpirun in place of each worker. It runs PROGRAM, then records how it ended in DIR/rank-R (the
// time, and "exit N" or "signal S") and ends the same way, so launch can name the first rank that
// failed from these files. mpirun's own summary names it too, but under load it sometimes prints
// only "1 process returned a non-zero exit code" (seen in CI-like runs of tests/launch_test.sh).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cli/subcommands.h"
#include "osprey/io/subprocess.h"

namespace osprey::cli {

namespace {

std::string rank_of_this_process() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return v;
  }
  return "0";
}

[[noreturn]] void run_worker(const std::string& dir, const std::vector<std::string>& command) {
  // mpirun's SIGTERM (or a Ctrl-C it passes on) goes to the worker, which ends as it likes.
  io::SignalForwarding signals(io::SignalForwarding::Target::process);
  io::ChildProcess worker = io::ChildProcess::start(
      command, {.pipes = false, .name = "osprey launch", .forward_signals_to_it = true});
  const int status = worker.wait();
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const std::string rank = rank_of_this_process();
  const std::string path = dir + "/rank-" + rank, tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << now << (WIFSIGNALED(status) ? " signal " : " exit ")
        << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
  }
  std::exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace

void add_launch_worker(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto command = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("launch-worker", "Run one worker for osprey launch (internal)");
  cmd->group("");  // hidden from --help: launch's own plumbing
  cmd->add_option("dir", *dir, "Where to record how the worker ended")->required();
  cmd->add_option("command", *command, "PROGRAM ARGS... (after --)")->required();
  cmd->callback([dir, command] { run_worker(*dir, *command); });
}

}  // namespace osprey::cli
