#include "cli/launch_ps.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/launch_util.h"
#include "cli/process.h"
#include "osprey/core/error.h"

namespace osprey::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_signal{0};
void on_stop_signal(int sig) { g_stop_signal = sig; }

// A port nothing listens on now: the kernel's pick for an ephemeral bind on loopback.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  OSPREY_CHECK_T(Error, fd >= 0, "launch: socket failed: {}", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(fd);
  OSPREY_CHECK_T(Error, ok, "launch: cannot find a free port on 127.0.0.1: {}",
                 std::strerror(errno));
  return ntohs(a.sin_port);
}

struct Task {
  std::string type;  // chief, worker, ps
  int index = 0;
  std::string label;  // "[worker 1]"
  std::vector<std::string> argv;
  std::vector<std::string> env;
  Child child;
  bool running = false;
  int restarts_left = 0;
  std::string pending[2];  // a line not yet ended, per stream
  int status = 0;          // waitpid's, once it ended
};

// Prints every complete line of `data` with the task's label; keeps the rest for later.
void emit(Task& t, int stream, std::string_view data, bool flush_rest) {
  std::string& buf = t.pending[stream];
  buf.append(data);
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    fmt::print(stream == 0 ? stdout : stderr, "{} {}\n", t.label,
               std::string_view(buf).substr(start, nl - start));
  }
  buf.erase(0, start);
  if (flush_rest && !buf.empty()) {
    fmt::print(stream == 0 ? stdout : stderr, "{} {}\n", t.label, buf);
    buf.clear();
  }
  std::fflush(stream == 0 ? stdout : stderr);
}

void start(Task& t) {
  t.child = spawn(t.argv[0], t.argv, t.env);
  t.running = true;
}

std::string ending(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

}  // namespace

int run_ps_cluster(const PsClusterArgs& a) {
  OSPREY_CHECK(a.num_ps >= 0 && a.num_workers >= 1,
               "launch: --workers must be at least 1 and --ps at least 0. Received: {} and {}",
               a.num_workers, a.num_ps);
  const std::string host = "127.0.0.1";
  nlohmann::json cluster;
  cluster["chief"] = {fmt::format("{}:{}", host, free_port())};
  for (int i = 0; i < a.num_workers; ++i)
    cluster["worker"].push_back(fmt::format("{}:{}", host, free_port()));
  for (int i = 0; i < a.num_ps; ++i)
    cluster["ps"].push_back(fmt::format("{}:{}", host, free_port()));
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads =
      a.threads_per_worker > 0 ? a.threads_per_worker : std::max(1, cores / a.num_workers);
  const std::string self = self_executable();
  std::vector<Task> tasks;
  auto add = [&](const std::string& type, int index, std::vector<std::string> argv, int n) {
    Task t;
    t.type = type;
    t.index = index;
    t.label = type == "chief" ? "[chief]" : fmt::format("[{} {}]", type, index);
    t.argv = std::move(argv);
    const nlohmann::json config = {{"cluster", cluster},
                                   {"task", {{"type", type}, {"index", index}}}};
    EnvVars env =
        worker_environment(n, std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"));
    env.emplace_back("OSPREY_CONFIG", config.dump());
    t.env = child_environment(env);
    t.restarts_left = a.max_restarts;
    tasks.push_back(std::move(t));
  };
  if (!a.checkpoint_dir.empty()) std::filesystem::create_directories(a.checkpoint_dir);
  for (int i = 0; i < a.num_ps; ++i) {
    std::vector<std::string> argv = {self, "ps", "--listen", cluster["ps"][static_cast<size_t>(i)]};
    if (!a.checkpoint_dir.empty()) {
      const std::string dir = (std::filesystem::path(a.checkpoint_dir) / fmt::format("ps-{}", i));
      argv.insert(argv.end(), {"--checkpoint-dir", dir});
    }
    add("ps", i, std::move(argv), 1);
  }
  // The command as given: PATH lookup for a bare name, like a shell.
  std::vector<std::string> command = a.command;
  if (command[0].find('/') == std::string::npos) {
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
  }
  for (int i = 0; i < a.num_workers; ++i) add("worker", i, command, threads);
  add("chief", 0, command, 1);
  fmt::print(stderr, "osprey launch: a chief, {} workers and {} ps on {} ({})\n", a.num_workers,
             a.num_ps, host, cluster.dump());

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  for (Task& t : tasks) start(t);
  Task& chief = tasks.back();
  int chief_code = -1;
  std::optional<Clock::time_point> chief_ended;
  bool stopping = false;
  int received = 0;  // the signal that stopped the job
  std::vector<char> buf(1 << 16);
  auto stop_all = [&](int sig) {
    for (Task& t : tasks) {
      if (t.running) kill(t.child.pid, sig);
    }
  };
  while (std::any_of(tasks.begin(), tasks.end(), [](const Task& t) { return t.running; })) {
    if (const int sig = g_stop_signal.exchange(0); sig != 0) {
      stop_all(sig);
      stopping = true;
      received = sig;
    }
    // After the chief: workers finish by themselves (their fit ended); the ps are stopped once
    // no worker runs, and everyone after the grace period.
    if (chief_ended && !stopping) {
      const bool workers_done = std::none_of(tasks.begin(), tasks.end(), [](const Task& t) {
        return t.running && t.type == "worker";
      });
      if (workers_done || Clock::now() - *chief_ended > std::chrono::seconds(60)) {
        stop_all(SIGTERM);
        stopping = true;
      }
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owner;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
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
      Task& t = tasks[owner[f].first];
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
      if (&t == &chief) {
        chief_code = WIFSIGNALED(t.status) ? 128 + WTERMSIG(t.status) : WEXITSTATUS(t.status);
        chief_ended = Clock::now();
        if (chief_code != 0) fmt::print(stderr, "osprey launch: the chief {}\n", ending(t.status));
        continue;
      }
      const bool failed = !(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0);
      if (!failed || chief_ended || stopping) continue;
      if (t.restarts_left > 0) {
        --t.restarts_left;
        fmt::print(stderr, "osprey launch: {} {} {}; restarting it ({} restarts left)\n", t.type,
                   t.index, ending(t.status), t.restarts_left);
        start(t);
      } else {
        fmt::print(stderr,
                   "osprey launch: {} {} {}; no restarts left, the job goes on without it\n",
                   t.type, t.index, ending(t.status));
      }
      std::fflush(stderr);
    }
  }
  if (received != 0) {
    fmt::print(stderr, "osprey launch: stopped by signal {} ({})\n", received, strsignal(received));
    return 128 + received;
  }
  return chief_code < 0 ? 1 : chief_code;
}

}  // namespace osprey::cli
