// A cluster of processes on this host, supervised by `osprey launch`: the parameter-server cluster
// (--workers M --ps N, launch_ps.cpp) and the tuning study (--tuners N, launch_tuners.cpp) are the
// same loop with different rules for who restarts. Output lines come back prefixed with the
// task's label ("[worker 1] ..."); Ctrl-C and SIGTERM are passed on to every task.
#pragma once

#include <sched.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace osprey::cli {

struct LocalTask {
  std::string type;  // "chief", "worker", "ps", "tuner"
  int index = 0;
  std::string label;                // "[worker 1]"
  std::vector<std::string> argv;    // a bare argv[0] is looked up on PATH
  std::vector<std::string> env;     // the whole environment
  std::optional<cpu_set_t> cpus{};  // pinned to these cores
  int restarts_left = 0;            // after a failure (nonzero exit, signal)
  // The chief: when it ends, so does the job (its exit code is launch's).
  bool primary = false;
  // Restart the primary too when it fails (a tuning chief resumes from its directory).
  bool restart_primary = false;
  // Added to the environment when the task is restarted after a failure.
  std::vector<std::pair<std::string, std::string>> restart_env{};
  // An exit code meaning "start me again" (a tuner worker that ran its share of trials): the
  // task is started afresh while the primary runs, without using up a restart.
  std::optional<int> respawn_code{};
  // Stopped once the primary ended and no task without this flag runs (the ps).
  bool serves_others = false;
};

// Starts every task, forwards their output, restarts them by their rules, and after the primary
// ends gives the others `grace_seconds` to finish before stopping them (SIGTERM, and SIGKILL for
// one still running a grace later; the same after Ctrl-C or SIGTERM). Returns the primary's
// exit code (128 + signal when killed by one), or 128 + the signal that stopped launch.
int supervise(std::vector<LocalTask> tasks, double grace_seconds);

}  // namespace osprey::cli
