// The supervision loop shared by the local clusters of `osprey launch` (local_cluster.h).
#include "cli/launch/local_cluster.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "cli/launch/launch_util.h"
#include "osprey/core/error.h"
#include "osprey/io/subprocess.h"

namespace osprey::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Running {
  LocalTask task;
  io::ChildProcess child;
  bool running = false;
  io::LineSplitter lines[2];  // stdout, stderr
};

// Prints each line with the task's label.
void emit(const Running& t, int stream, const std::vector<std::string>& lines) {
  FILE* out = stream == 0 ? stdout : stderr;
  for (const std::string& line : lines) fmt::print(out, "{} {}\n", t.task.label, line);
  std::fflush(out);
}

void start(Running& t) {
  t.child = io::ChildProcess::start(
      t.task.argv, {.env = t.task.env, .cpus = t.task.cpus, .name = "osprey launch"});
  t.running = true;
}

// Adds or replaces NAME=VALUE in an environment.
void set_env(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
  env.push_back(prefix + value);
}

}  // namespace

int supervise(std::vector<LocalTask> specs, const SuperviseOptions& options) {
  std::vector<Running> tasks;
  tasks.reserve(specs.size());
  for (LocalTask& s : specs) {
    tasks.emplace_back();
    tasks.back().task = std::move(s);
  }
  // Ctrl-C and SIGTERM are recorded (no single child to pass them to) and passed to every task.
  io::SignalForwarding signals(io::SignalForwarding::Target::process);

  for (Running& t : tasks) start(t);
  int primary_code = -1;
  std::optional<Clock::time_point> primary_ended;
  bool stopping = false;
  int received = 0;  // the signal that stopped the job
  std::optional<Clock::time_point> asked_to_stop;
  bool killed = false;
  std::vector<char> buf(1 << 16);
  auto stop_all = [&](int sig) {
    for (Running& t : tasks) {
      if (t.running) t.child.send(sig);
    }
    if (!asked_to_stop) asked_to_stop = Clock::now();
  };
  const auto finish_grace = std::chrono::duration<double>(options.finish_grace_seconds);
  const auto stop_grace = std::chrono::duration<double>(options.stop_grace_seconds);
  while (std::any_of(tasks.begin(), tasks.end(), [](const Running& t) { return t.running; })) {
    if (const int sig = io::SignalForwarding::take_received(); sig != 0) {
      stop_all(sig);
      stopping = true;
      received = sig;
    }
    // A task still running a grace after it was asked to stop is killed: launch never waits
    // without bound on one that ignores or cannot act on SIGTERM.
    if (asked_to_stop && !killed && Clock::now() - *asked_to_stop > stop_grace) {
      for (const Running& t : tasks) {
        if (t.running)
          fmt::print(
              stderr,
              "osprey launch: the {} {} did not stop {} s after it was asked to; killing it\n",
              t.task.type, t.task.index, options.stop_grace_seconds);
      }
      std::fflush(stderr);
      stop_all(SIGKILL);
      killed = true;
    }
    // After the primary's success: the others finish by themselves (their fit or study ended);
    // those that serve others (the ps) are stopped once nobody else runs, and everyone after the
    // grace. After its failure nobody waits: the workers would wait for steps that never come.
    if (primary_ended && !stopping) {
      const bool others_done = std::none_of(tasks.begin(), tasks.end(), [](const Running& t) {
        return t.running && !t.task.serves_others;
      });
      if (primary_code != 0 || others_done || Clock::now() - *primary_ended > finish_grace) {
        stop_all(SIGTERM);
        stopping = true;
      }
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owner;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const Running& t = tasks[i];
      if (!t.running) continue;
      if (t.child.out_fd() >= 0) {
        fds.push_back({t.child.out_fd(), POLLIN, 0});
        owner.emplace_back(i, 0);
      }
      if (t.child.err_fd() >= 0) {
        fds.push_back({t.child.err_fd(), POLLIN, 0});
        owner.emplace_back(i, 1);
      }
    }
    if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) {
      OSPREY_THROW(Error, "osprey launch: poll failed: {}", std::strerror(errno));
    }
    for (size_t f = 0; f < fds.size(); ++f) {
      if (fds[f].revents == 0) continue;
      Running& t = tasks[owner[f].first];
      const int stream = owner[f].second;
      const int fd = stream == 0 ? t.child.out_fd() : t.child.err_fd();
      const ssize_t n = read(fd, buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) {
        emit(t, stream, t.lines[stream].feed(std::string_view(buf.data(), static_cast<size_t>(n))));
        continue;
      }
      emit(t, stream, t.lines[stream].finish());
      stream == 0 ? t.child.close_out() : t.child.close_err();
      if (t.child.out_fd() >= 0 || t.child.err_fd() >= 0) continue;
      const int status = t.child.wait();
      t.running = false;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      const bool respawn =
          WIFEXITED(status) && t.task.respawn_code && WEXITSTATUS(status) == *t.task.respawn_code;
      // Exit 2, 126, 127: the same command would fail again, so it is said once, not restarted.
      const std::optional<std::string> deterministic =
          failed && !respawn && WIFEXITED(status) ? deterministic_failure(WEXITSTATUS(status))
                                                  : std::nullopt;
      const std::string why = deterministic ? fmt::format(" ({})", *deterministic) : "";
      if (t.task.primary && !(failed && t.task.restart_primary && !respawn && !deterministic &&
                              t.task.restarts_left > 0 && !stopping)) {
        primary_code = io::shell_exit_code(status);
        primary_ended = Clock::now();
        if (primary_code != 0) {
          const bool would_restart = t.task.restart_primary && t.task.restarts_left > 0;
          fmt::print(stderr, "osprey launch: the {} {}{}{}\n", t.task.type,
                     io::describe_wait_status(status), why,
                     deterministic && would_restart ? fmt::format("; {}", kNotRestarting) : "");
          std::fflush(stderr);
        }
        continue;
      }
      if (primary_ended || stopping) continue;
      if (respawn) {
        start(t);
        continue;
      }
      if (!failed) continue;
      if (deterministic) {
        fmt::print(stderr, "osprey launch: {} {} {}{}; {}\n", t.task.type, t.task.index,
                   io::describe_wait_status(status), why, kNotRestarting);
      } else if (t.task.restarts_left > 0) {
        --t.task.restarts_left;
        fmt::print(stderr, "osprey launch: {} {} {}; restarting it ({} restarts left)\n",
                   t.task.type, t.task.index, io::describe_wait_status(status),
                   t.task.restarts_left);
        for (const auto& [k, v] : t.task.restart_env) set_env(t.task.env, k, v);
        start(t);
      } else {
        fmt::print(stderr,
                   "osprey launch: {} {} {}; no restarts left, the job goes on without it\n",
                   t.task.type, t.task.index, io::describe_wait_status(status));
      }
      std::fflush(stderr);
    }
  }
  if (received != 0) {
    fmt::print(stderr, "osprey launch: stopped by signal {} ({})\n", received, strsignal(received));
    return 128 + received;
  }
  return primary_code < 0 ? 1 : primary_code;
}

}  // namespace osprey::cli
