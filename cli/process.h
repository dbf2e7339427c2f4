// Child processes for `osprey launch`: start a program with its stdout and stderr on pipes, in a
// process group of its own, and stop it if launch dies. Shared by the mpirun/srun launcher
// (launch.cpp) and the local parameter-server cluster (launch_ps.cpp).
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

namespace osprey::cli {

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};

// Starts `exe` with `argv` and `env`, its stdout and stderr on pipes, in a process group of its
// own. Own group: Ctrl-C reaches only launch, which passes it on once (mpirun getting the
// terminal's SIGINT too would see two, and exit at once, leaving its workers running). If launch
// dies without passing a signal on (SIGKILL), PR_SET_PDEATHSIG stops the child. When `publish`
// is given, the pid is stored there before SIGINT and SIGTERM are unblocked again, so a signal
// handler forwarding to it never misses the child. Throws osprey::Error when fork or pipe fail.
// With `cpus`, the child runs only on those cores (a tuner worker's core group).
Child spawn(const std::string& exe, const std::vector<std::string>& argv,
            const std::vector<std::string>& env, std::atomic<pid_t>* publish = nullptr,
            const cpu_set_t* cpus = nullptr);

// This process's environment with `overrides` (NAME, VALUE) replacing or adding variables.
std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides);

// The path of the running executable (/proc/self/exe resolved), for starting osprey again.
std::string self_executable();

}  // namespace osprey::cli
