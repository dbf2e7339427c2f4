// `osprey launch -n N [--hosts h1,h2] [--threads-per-worker T] -- PROGRAM ARGS...`: starts N
// workers of PROGRAM through mpirun (or srun inside a Slurm allocation), like torchrun or
// horovodrun. Each worker gets its share of the cores in OSPREY_NUM_THREADS / OMP_NUM_THREADS;
// its output comes back line by line as "[rank R] text". A failure restarts the whole job, up to
// --max-restarts times in all (default 3), each attempt's ending printed with the rank that
// failed; then launch exits with the first failing worker's exit code and names its rank. A
// deterministic failure (exit 2, a usage error; 126 or 127, a program that cannot run) is never
// restarted: the same command would fail again (launch_util.h, after_failure). The
// pure parts live in launch_util.h. `osprey launch --workers M --ps N -- PROGRAM` starts a
// parameter-server cluster on this host instead (launch_ps.h).
#include <dirent.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <thread>

#include "cli/launch/launch_ps.h"
#include "cli/launch/launch_tuners.h"
#include "cli/launch/launch_util.h"
#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/io/subprocess.h"

namespace osprey::cli {

namespace {

struct LaunchArgs {
  int num_workers = 0;
  // A parameter-server cluster (launch_ps.h): --workers M and --ps N instead of -n.
  int ps_workers = 0;
  int num_ps = 1;
  std::string ps_checkpoint_dir;
  // A tuning study (launch_tuners.h): --tuners N.
  int tuners = 0;
  int trials_per_process = 1;
  std::vector<std::string> hosts;
  int threads_per_worker = 0;
  std::string launcher = "auto";
  bool dry_run = false;
  int max_restarts = 3;
  std::vector<std::string> command;
};

// The cores this process may run on (a cgroup or taskset may allow fewer than the machine has).
int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

struct LauncherResult {
  int exit_code = 0;                     // 0 when killed by a signal
  int signal = 0;                        // what killed it
  std::optional<WorkerFailure> failure;  // the first failing worker its summary names
};

// Forwards the launcher's output until it closes both pipes, then reaps it.
LauncherResult forward_output(Launcher launcher, io::ChildProcess& child) {
  OutputDemux demux[2] = {{launcher, Stream::out}, {launcher, Stream::err}};
  FailureParser failures;
  pollfd fds[2] = {{child.out_fd(), POLLIN, 0}, {child.err_fd(), POLLIN, 0}};
  auto print = [&](const std::vector<OutputLine>& lines) {
    for (const OutputLine& line : lines) {
      if (line.rank < 0) failures.feed(line.text);
      fmt::print(line.stream == Stream::out ? stdout : stderr, "{}\n", format_line(line));
    }
    std::fflush(stdout);
    std::fflush(stderr);
  };
  std::vector<char> buf(1 << 16);
  for (int open = 2; open > 0;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;  // a forwarded signal
      OSPREY_THROW(Error, "osprey launch: poll failed: {}", std::strerror(errno));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        print(demux[i].finish());
        i == 0 ? child.close_out() : child.close_err();
        fds[i].fd = -1;
        --open;
      } else {
        print(demux[i].feed(std::string_view(buf.data(), static_cast<size_t>(n))));
      }
    }
  }
  const int status = child.wait();
  io::SignalForwarding::set_target(0);
  if (WIFSIGNALED(status)) return {0, WTERMSIG(status), failures.failure()};
  return {WEXITSTATUS(status), 0, failures.failure()};
}

// The first worker that failed, from the files `osprey launch-worker` left in dir
// (launch_worker.cpp): the earliest non-zero ending. Empty when none failed or none wrote (e.g. on
// other hosts).
std::optional<WorkerFailure> failure_from_status_files(const std::string& dir) {
  std::optional<WorkerFailure> first;
  long long first_time = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return first;
  while (dirent* e = readdir(d)) {
    int rank = 0;
    if (std::sscanf(e->d_name, "rank-%d", &rank) != 1 || std::strstr(e->d_name, ".tmp") != nullptr)
      continue;
    FILE* f = std::fopen((dir + "/" + e->d_name).c_str(), "r");
    if (f == nullptr) continue;
    long long when = 0;
    char how[16] = {0};
    int value = 0;
    const bool ok = std::fscanf(f, "%lld %15s %d", &when, how, &value) == 3;
    std::fclose(f);
    if (!ok || value == 0 || (first && when >= first_time)) continue;
    const bool signalled = std::strcmp(how, "signal") == 0;
    first = WorkerFailure{.rank = rank,
                          .exit_code = signalled ? 0 : value,
                          .signal = signalled ? value : 0,
                          .signal_name = signalled ? strsignal(value) : ""};
    first_time = when;
  }
  closedir(d);
  return first;
}

// How an attempt ended: the exit code launch reports and the sentence naming the rank.
struct Ending {
  int code = 0;
  std::string message;
};
Ending describe_ending(const LauncherResult& r, const std::string& launcher_name) {
  const int code = r.signal != 0 ? 128 + r.signal : r.exit_code;
  if (r.failure) return {r.failure->launch_exit_code(code), r.failure->describe()};
  if (r.signal != 0) {
    return {code, fmt::format("{} was killed by signal {} ({})", launcher_name, r.signal,
                              strsignal(r.signal))};
  }
  return {code, fmt::format("{} failed with exit code {}", launcher_name, code)};
}

[[noreturn]] void exit_with(int code, const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "osprey launch: {}\n", message);
  std::fflush(stderr);
  std::exit(code);
}

// One run of the whole job: on this host each worker runs under `osprey launch-worker`, which
// records how it ended, so a failure names the rank that failed first.
LauncherResult run_attempt(const std::string& exe, Launcher launcher, const LaunchSpec& spec,
                           const std::vector<std::string>& argv) {
  std::string status_dir;
  std::vector<std::string> run_argv = argv;
  if (launcher == Launcher::mpirun && spec.hosts.empty()) {
    char tmpl[] = "/tmp/osprey-launch-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) {
      status_dir = tmpl;
      LaunchSpec wrapped = spec;
      wrapped.command = {"/proc/self/exe", "launch-worker", status_dir, "--"};
      wrapped.command.insert(wrapped.command.end(), spec.command.begin(), spec.command.end());
      wrapped.command[0] = io::self_executable();
      run_argv = launcher_argv(wrapped);
    }
  }
  run_argv[0] = exe;
  io::ChildProcess child = io::ChildProcess::start(run_argv, {.env = io::environment_with(spec.env),
                                                              .name = "osprey launch",
                                                              .forward_signals_to_it = true});
  LauncherResult r = forward_output(launcher, child);
  if (!status_dir.empty()) {
    if (auto f = failure_from_status_files(status_dir)) r.failure = f;
    std::filesystem::remove_all(status_dir);
  }
  return r;
}

void run_launch(const LaunchArgs& a) {
  if (a.tuners > 0) {
    OSPREY_CHECK_T(cli::UsageError, a.num_workers == 0 && a.ps_workers == 0 && a.hosts.empty(),
                   "osprey launch: --tuners starts a tuning study on this host; -n, --workers "
                   "and --hosts start training workers: use one or the other");
    std::exit(run_tuner_study({.num_tuners = a.tuners,
                               .threads_per_tuner = a.threads_per_worker,
                               .trials_per_process = a.trials_per_process,
                               .max_restarts = a.max_restarts,
                               .command = a.command}));
  }
  if (a.ps_workers > 0) {
    OSPREY_CHECK_T(cli::UsageError, a.num_workers == 0 && a.hosts.empty(),
                   "osprey launch: --workers starts a parameter-server cluster on this host; -n "
                   "and --hosts start MPI workers: use one or the other");
    std::exit(run_ps_cluster({.num_ps = a.num_ps,
                              .num_workers = a.ps_workers,
                              .checkpoint_dir = a.ps_checkpoint_dir,
                              .max_restarts = a.max_restarts,
                              .threads_per_worker = a.threads_per_worker,
                              .command = a.command}));
  }
  OSPREY_CHECK_T(cli::UsageError, a.num_workers > 0,
                 "osprey launch: -n N (MPI workers) or --workers M (a parameter-server cluster) is "
                 "required");
  const char* slurm_job = std::getenv("SLURM_JOB_ID");
  const Launcher launcher = a.launcher == "srun" ? Launcher::srun
                            : a.launcher == "mpirun"
                                ? Launcher::mpirun
                                : choose_launcher(slurm_job != nullptr && *slurm_job != '\0',
                                                  io::find_on_path("srun").has_value());
  const std::string name = launcher == Launcher::srun ? "srun" : "mpirun";
  const std::optional<std::string> exe = io::find_on_path(name);
  if (!exe && !a.dry_run) {
    exit_with(1, launcher == Launcher::srun ? "srun not found on PATH"
                                            : "mpirun not found on PATH; install openmpi-bin");
  }
  const int threads = worker_threads(a.threads_per_worker, a.num_workers,
                                     static_cast<int>(a.hosts.size()), available_cores());
  LaunchSpec spec{.launcher = launcher,
                  .num_workers = a.num_workers,
                  .hosts = a.hosts,
                  .env = worker_environment(threads, std::getenv("OMP_WAIT_POLICY"),
                                            std::getenv("GOMP_SPINCOUNT")),
                  .as_root = geteuid() == 0,
                  .command = a.command};
  const std::vector<std::string> argv = launcher_argv(spec);
  if (a.dry_run) {
    std::string line;
    for (const auto& [k, v] : spec.env) line += io::shell_quote(fmt::format("{}={}", k, v)) + " ";
    for (const std::string& arg : argv) line += io::shell_quote(arg) + " ";
    line.pop_back();
    fmt::print("{}\n", line);
    return;
  }

  // Ctrl-C and SIGTERM go to the launcher once (it stops its workers); poll returns EINTR.
  io::SignalForwarding signals(io::SignalForwarding::Target::process);

  // A failed attempt restarts the whole job (every worker: a program with BackupAndRestore then
  // resumes from its last backup), up to max_restarts times in all, whichever rank failed.
  const int attempts = a.max_restarts + 1;
  for (int attempt = 1;; ++attempt) {
    const LauncherResult r = run_attempt(*exe, launcher, spec, argv);
    if (r.exit_code == 0 && r.signal == 0) {
      if (attempt > 1)
        fmt::print(stderr, "osprey launch: attempt {} of {} succeeded\n", attempt, attempts);
      return;
    }
    // Signalled, the workers die of it (srun even kills them): name the signal, not a rank.
    if (const int sig = io::SignalForwarding::received(); sig != 0) {
      exit_with(128 + sig, fmt::format("stopped by signal {} ({})", sig, strsignal(sig)));
    }
    const Ending ending = describe_ending(r, name);
    const AfterFailure next = after_failure(attempt, attempts, ending.code, ending.message);
    if (!next.restart) exit_with(ending.code, next.message);
    fmt::print(stderr, "osprey launch: {}\n", next.message);
    std::fflush(stderr);
  }
}

// A host for -H: a plain name, since launch adds the slot counts itself.
const CLI::Validator kHostName(
    [](std::string& host) -> std::string {
      if (host.empty() || host.find_first_of(": \t") != std::string::npos) {
        return fmt::format("a host is a plain name without ':slots' or spaces. Received: '{}'",
                           host);
      }
      return "";
    },
    "HOST");

}  // namespace

void add_launch(CLI::App& app) {
  auto args = std::make_shared<LaunchArgs>();
  auto* cmd = app.add_subcommand(
      "launch", "Start N workers of a program through mpirun (srun under Slurm), like torchrun");
  cmd->add_option("-n,--num-workers", args->num_workers, "Number of workers (MPI ranks)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_option("--workers", args->ps_workers,
                  "Start a parameter-server cluster on this host instead: a chief and M workers "
                  "of PROGRAM, and --ps N `osprey ps` tasks, each with its OSPREY_CONFIG")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_option("--ps", args->num_ps,
                  "With --workers: parameter servers (0: the chief hosts the one ps)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--ps-checkpoint-dir", args->ps_checkpoint_dir,
                  "With --workers: each ps checkpoints its shard to DIR/ps-<i> and a restarted ps "
                  "restores it");
  cmd->add_option("--tuners", args->tuners,
                  "Start a tuning study on this host instead: a chief serving the oracle and N "
                  "tuner workers of PROGRAM (a Tuner program or `osprey tune`), each on its own "
                  "cores, one trial per process")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--trials-per-process", args->trials_per_process,
                  "With --tuners: trials a worker process runs before a fresh one takes its "
                  "place (0: no limit)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--hosts", args->hosts,
                  "Comma-separated hosts; the workers are spread over them round robin")
      ->delimiter(',')
      ->check(kHostName);
  cmd->add_option("--threads-per-worker", args->threads_per_worker,
                  "Kernel threads per worker (default: this host's cores / its workers)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_option("--launcher", args->launcher, "auto: srun inside a Slurm allocation, else mpirun")
      ->check(CLI::IsMember({"auto", "mpirun", "srun"}));
  cmd->add_option("--max-restarts", args->max_restarts,
                  "Restart the whole job after a failure up to K times in all (each attempt's "
                  "ending is printed; workers with BackupAndRestore resume from their backup)")
      ->check(CLI::Range(0, 1000));
  cmd->add_flag("--dry-run", args->dry_run, "Print the launcher's command line and exit");
  cmd->add_option("command", args->command, "PROGRAM ARGS... (after --)")->required();
  cmd->callback([args] { run_launch(*args); });
}

}  // namespace osprey::cli
