#include "cli/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "osprey/core/error.h"

extern char** environ;

namespace osprey::cli {

Child spawn(const std::string& exe, const std::vector<std::string>& argv,
            const std::vector<std::string>& env, std::atomic<pid_t>* publish,
            const cpu_set_t* cpus) {
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    OSPREY_THROW(Error, "launch: cannot create pipes: {}", std::strerror(errno));
  }
  // Signals wait until the pid is published, so none is lost between fork and a handler.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &old);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
    if (cpus != nullptr) sched_setaffinity(0, sizeof(*cpus), cpus);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execve(exe.c_str(), cargv.data(), cenv.data());
    const char msg[] = "osprey launch: exec of the launcher failed\n";
    [[maybe_unused]] const ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
  }
  const int fork_errno = errno;
  if (pid > 0) {
    setpgid(pid, pid);  // also here, so that it holds whichever of the two runs first
    if (publish != nullptr) *publish = pid;
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    OSPREY_THROW(Error, "launch: fork failed: {}", std::strerror(fork_errno));
  }
  return {pid, out[0], err[0]};
}

std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    const bool overridden = std::any_of(overrides.begin(), overrides.end(), [&](const auto& kv) {
      return var.size() > kv.first.size() && var.starts_with(kv.first) &&
             var[kv.first.size()] == '=';
    });
    if (!overridden) env.emplace_back(var);
  }
  for (const auto& [name, value] : overrides) env.push_back(fmt::format("{}={}", name, value));
  return env;
}

std::string self_executable() {
  char self[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

}  // namespace osprey::cli
