#include "osprey/io/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "osprey/core/error.h"

extern char** environ;

namespace osprey::io {

namespace {

// The signal handler's state: process-wide, as signal dispositions are.
std::atomic<pid_t> g_target{0};
std::atomic<int> g_received{0};
std::atomic<bool> g_group{false};
std::atomic<bool> g_die_after{false};
std::atomic<bool> g_active{false};
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

void forward(int sig) {
  g_received = sig;
  const pid_t target = g_target;
  if (target > 0) {
    if (g_group) {
      kill(-target, SIGTERM);
    } else {
      kill(target, sig);
    }
  }
  if (g_die_after) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

struct sigaction g_old_int {};
struct sigaction g_old_term {};

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

void write_all(int fd, const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      out_fd_(std::exchange(o.out_fd_, -1)),
      err_fd_(std::exchange(o.err_fd_, -1)),
      reaped_(o.reaped_),
      status_(o.status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    close_pipes();
    pid_ = std::exchange(o.pid_, -1);
    out_fd_ = std::exchange(o.out_fd_, -1);
    err_fd_ = std::exchange(o.err_fd_, -1);
    reaped_ = o.reaped_;
    status_ = o.status_;
  }
  return *this;
}

ChildProcess::~ChildProcess() { close_pipes(); }

ChildProcess ChildProcess::start(const std::vector<std::string>& argv_in,
                                 const ChildOptions& options) {
  OSPREY_CHECK(!argv_in.empty() && !argv_in[0].empty(), "{}: no program to start", options.name);
  const std::vector<std::string> argv = find_program(argv_in);
  const std::vector<std::string> env = options.env.empty() ? environment_with({}) : options.env;
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);
  // Everything the child writes after a failed exec is made before the fork: after it, only
  // async-signal-safe calls.
  const std::string cannot_run = fmt::format("{}: cannot run {}: ", options.name, argv_in[0]);
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (options.pipes && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) close(fd);
    }
    OSPREY_THROW(Error, "{}: cannot create pipes for {}: {}", options.name, argv_in[0],
                 std::strerror(e));
  }
  // Signals wait until the pid is published, so none is lost between fork and a handler.
  const sigset_t block = stop_signals();
  sigset_t old;
  sigprocmask(SIG_BLOCK, &block, &old);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
    if (options.cpus) sched_setaffinity(0, sizeof(*options.cpus), &*options.cpus);
    if (options.pipes) {
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execve(cargv[0], cargv.data(), cenv.data());
    const char* why = strerrordesc_np(errno);
    write_all(STDERR_FILENO, cannot_run.data(), cannot_run.size());
    write_all(STDERR_FILENO, why, std::strlen(why));
    write_all(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  const int fork_errno = errno;
  if (pid > 0) {
    setpgid(pid, pid);  // also here, so that it holds whichever of the two runs first
    if (options.forward_signals_to_it) SignalForwarding::set_target(pid);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (options.pipes) {
    close(out[1]);
    close(err[1]);
  }
  if (pid < 0) {
    if (options.pipes) {
      close(out[0]);
      close(err[0]);
    }
    OSPREY_THROW(Error, "{}: cannot start {}: fork failed: {}", options.name, argv_in[0],
                 std::strerror(fork_errno));
  }
  ChildProcess c;
  c.pid_ = pid;
  c.out_fd_ = out[0];
  c.err_fd_ = err[0];
  return c;
}

void ChildProcess::close_out() {
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
}

void ChildProcess::close_err() {
  if (err_fd_ >= 0) close(err_fd_);
  err_fd_ = -1;
}

void ChildProcess::close_pipes() {
  close_out();
  close_err();
}

void ChildProcess::send(int sig) const {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

void ChildProcess::send_to_group(int sig) const {
  // The group outlives its leader: what the program started may still run after it was reaped.
  if (pid_ > 0) kill(-pid_, sig);
}

std::optional<int> ChildProcess::poll_exit() {
  if (reaped_) return status_;
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  reaped_ = true;
  status_ = status;
  return status_;
}

int ChildProcess::wait() {
  if (reaped_ || pid_ <= 0) return status_;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return status_;  // not ours to wait for (already reaped elsewhere)
  }
  reaped_ = true;
  status_ = status;
  return status_;
}

SignalForwarding::SignalForwarding(Target target, bool die_after) {
  OSPREY_CHECK(!g_active.exchange(true), "SignalForwarding: one is already active in this process");
  g_target = 0;
  g_received = 0;
  g_group = target == Target::group;
  g_die_after = die_after;
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll or waitpid returns EINTR
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

SignalForwarding::~SignalForwarding() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_target = 0;
  g_active = false;
}

void SignalForwarding::set_target(pid_t pid) noexcept { g_target = pid; }
int SignalForwarding::received() noexcept { return g_received; }
int SignalForwarding::take_received() noexcept { return g_received.exchange(0); }

int shell_exit_code(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

std::string describe_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(wait_status),
                       strsignal(WTERMSIG(wait_status)));
  }
  return fmt::format("exited with code {}", WEXITSTATUS(wait_status));
}

std::optional<std::string> find_on_path(std::string_view name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string_view::npos) return std::string(name);
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    const std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

std::vector<std::string> find_program(std::vector<std::string> command) {
  if (command.empty() || command[0].find('/') != std::string::npos) return command;
  if (std::optional<std::string> path = find_on_path(command[0])) command[0] = std::move(*path);
  return command;
}

std::string shell_quote(std::string_view s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-+=/.,:@%") == std::string_view::npos)
    return std::string(s);
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> environment_with(
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

std::vector<std::string> LineSplitter::feed(std::string_view bytes) {
  std::vector<std::string> lines;
  for (char c : bytes) {
    if (c != '\n') partial_ += c;
    if (c == '\n' || partial_.size() >= max_) lines.push_back(take());
  }
  return lines;
}

std::vector<std::string> LineSplitter::finish() {
  if (partial_.empty()) return {};
  return {take()};
}

std::string LineSplitter::take() {
  std::string line = std::move(partial_);
  partial_.clear();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace osprey::io
