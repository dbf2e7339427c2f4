// The supervision loop shared by the local clusters of `osprey launch` (local_cluster.h).
#include "cli/local_cluster.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "cli/process.h"
#include "osprey/core/error.h"

namespace osprey::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_cluster_stop_signal{0};
void on_cluster_stop_signal(int sig) { g_cluster_stop_signal = sig; }

struct Running {
  LocalTask task;
  Child child;
  bool running = false;
  std::string pending[2];  // a line not yet ended, per stream
  int status = 0;          // waitpid's, once it ended
};

// Prints every complete line of `data` with the task's label; keeps the rest for later.
void emit(Running& t, int stream, std::string_view data, bool flush_rest) {
  std::string& buf = t.pending[stream];
  buf.append(data);
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    fmt::print(stream == 0 ? stdout : stderr, "{} {}\n", t.task.label,
               std::string_view(buf).substr(start, nl - start));
  }
  buf.erase(0, start);
  if (flush_rest && !buf.empty()) {
    fmt::print(stream == 0 ? stdout : stderr, "{} {}\n", t.task.label, buf);
    buf.clear();
  }
  std::fflush(stream == 0 ? stdout : stderr);
}

void start(Running& t) {
  t.child = spawn(t.task.argv[0], t.task.argv, t.task.env, nullptr,
                  t.task.cpus ? &*t.task.cpus : nullptr);
  t.running = true;
}

std::string ending(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

// Adds or replaces NAME=VALUE in an environment.
void set_env(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
  env.push_back(prefix + value);
}

}  // namespace

std::vector<std::string> find_program(std::vector<std::string> command) {
  if (command.empty() || command[0].find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string candidate = std::string(rest.substr(0, colon)) + "/" + command[0];
    if (access(candidate.c_str(), X_OK) == 0) {
      command[0] = candidate;
      break;
    }
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return command;
}

int supervise(std::vector<LocalTask> specs, double grace_seconds) {
  std::vector<Running> tasks;
  tasks.reserve(specs.size());
  for (LocalTask& s : specs) tasks.push_back({std::move(s), {}, false, {}, 0});
  struct sigaction sa {};
  sa.sa_handler = on_cluster_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

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
      if (t.running) kill(t.child.pid, sig);
    }
    if (!asked_to_stop) asked_to_stop = Clock::now();
  };
  const auto grace = std::chrono::duration<double>(grace_seconds);
  while (std::any_of(tasks.begin(), tasks.end(), [](const Running& t) { return t.running; })) {
    if (const int sig = g_cluster_stop_signal.exchange(0); sig != 0) {
      stop_all(sig);
      stopping = true;
      received = sig;
    }
    // A task still running a grace after it was asked to stop is killed: launch never waits
    // without bound on one that ignores or cannot act on SIGTERM.
    if (asked_to_stop && !killed && Clock::now() - *asked_to_stop > grace) {
      for (const Running& t : tasks) {
        if (t.running)
          fmt::print(
              stderr,
              "osprey launch: the {} {} did not stop {} s after it was asked to; killing it\n",
              t.task.type, t.task.index, grace_seconds);
      }
      std::fflush(stderr);
      stop_all(SIGKILL);
      killed = true;
    }
    // After the primary: the others finish by themselves (their fit or study ended); those that
    // serve others (the ps) are stopped once nobody else runs, and everyone after the grace.
    if (primary_ended && !stopping) {
      const bool others_done = std::none_of(tasks.begin(), tasks.end(), [](const Running& t) {
        return t.running && !t.task.serves_others;
      });
      if (others_done || Clock::now() - *primary_ended > grace) {
        stop_all(SIGTERM);
        stopping = true;
      }
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owner;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const Running& t = tasks[i];
      if (!t.running) continue;
      if (t.child.out_fd >= 0) {
        fds.push_back({t.child.out_fd, POLLIN, 0});
        owner.emplace_back(i, 0);
      }
      if (t.child.err_fd >= 0) {
        fds.push_back({t.child.err_fd, POLLIN, 0});
        owner.emplace_back(i, 1);
      }
    }
    if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) {
      OSPREY_THROW(Error, "launch: poll failed: {}", std::strerror(errno));
    }
    for (size_t f = 0; f < fds.size(); ++f) {
      if (fds[f].revents == 0) continue;
      Running& t = tasks[owner[f].first];
      const int stream = owner[f].second;
      int& fd = stream == 0 ? t.child.out_fd : t.child.err_fd;
      const ssize_t n = read(fd, buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) {
        emit(t, stream, std::string_view(buf.data(), static_cast<size_t>(n)), false);
        continue;
      }
      emit(t, stream, {}, true);
      close(fd);
      fd = -1;
      if (t.child.out_fd >= 0 || t.child.err_fd >= 0) continue;
      while (waitpid(t.child.pid, &t.status, 0) < 0 && errno == EINTR) {
      }
      t.running = false;
      const bool failed = !(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0);
      const bool respawn = WIFEXITED(t.status) && t.task.respawn_code &&
                           WEXITSTATUS(t.status) == *t.task.respawn_code;
      if (t.task.primary && !(failed && t.task.restart_primary && !respawn &&
                              t.task.restarts_left > 0 && !stopping)) {
        primary_code = WIFSIGNALED(t.status) ? 128 + WTERMSIG(t.status) : WEXITSTATUS(t.status);
        primary_ended = Clock::now();
        if (primary_code != 0)
          fmt::print(stderr, "osprey launch: the {} {}\n", t.task.type, ending(t.status));
        continue;
      }
      if (primary_ended || stopping) continue;
      if (respawn) {
        start(t);
        continue;
      }
      if (!failed) continue;
      if (t.task.restarts_left > 0) {
        --t.task.restarts_left;
        fmt::print(stderr, "osprey launch: {} {} {}; restarting it ({} restarts left)\n",
                   t.task.type, t.task.index, ending(t.status), t.task.restarts_left);
        for (const auto& [k, v] : t.task.restart_env) set_env(t.task.env, k, v);
        start(t);
      } else {
        fmt::print(stderr,
                   "osprey launch: {} {} {}; no restarts left, the job goes on without it\n",
                   t.task.type, t.task.index, ending(t.status));
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
