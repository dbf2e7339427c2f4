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

struct SuperviseOptions {
  // After the primary ended with success: how long the others may go on to finish by themselves
  // (a worker's fit ends a little after the chief's) before they are asked to stop.
  double finish_grace_seconds = 60;
  // After a task was asked to stop (SIGTERM): how long before it is killed (SIGKILL).
  double stop_grace_seconds = 10;
};

// Starts every task, forwards their output, and restarts a task that fails by its rules, except
// after a deterministic failure (exit 2, 126, 127: launch_util.h, deterministic_failure), said once
// and not restarted. When the primary ends with success the others get finish_grace_seconds to
// finish, those serving others (the ps) being stopped as soon as nobody else runs; when it fails,
// every other task is stopped at once (SIGTERM). A task still running stop_grace_seconds after
// SIGTERM is killed (SIGKILL); the same after Ctrl-C or SIGTERM. Returns the primary's exit code
// (128 + signal when killed by one), or 128 + the signal that stopped launch.
int supervise(std::vector<LocalTask> tasks, const SuperviseOptions& options);

}  // namespace osprey::cli
