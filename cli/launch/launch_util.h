// The pure parts of `osprey launch` (cli/launch/launch.cpp): the launcher's command line and the
// workers' environment, the demultiplexing of the launcher's rank-tagged output into `[rank R] `
// lines, and the reading of the launcher's failure summary. No process is started here, so all of
// it is unit tested (tests/launch_test.cpp); launch.cpp adds the PATH look-up, fork/exec, pipes and
// signals.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace osprey::cli {

// Which program starts the workers; enumerators equal the --launcher strings.
enum class Launcher { mpirun, srun };

// auto: srun inside a Slurm allocation (SLURM_JOB_ID set) when srun is on PATH, else mpirun.
Launcher choose_launcher(bool in_slurm_allocation, bool srun_on_path);

// Workers per host when N workers are spread round robin over the hosts: host i gets N / H, plus
// one for the first N % H hosts. Hosts that would get none are left out by launcher_argv.
std::vector<int> slots_per_host(int num_workers, int num_hosts);

// Each worker's kernel threads: `threads_per_worker` if positive, else this host's cores divided
// among the workers that share it (all N without --hosts, else the largest slot count: the hosts
// are assumed to have as many cores as this one), at least 1.
int worker_threads(int threads_per_worker, int num_workers, int num_hosts, int cores);

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// What each worker gets: OSPREY_NUM_THREADS and OMP_NUM_THREADS = `threads`, and how idle OpenMP
// threads wait: the user's OMP_WAIT_POLICY or GOMP_SPINCOUNT when set, else a short spin
// (cli/wait_policy.h: a thread spinning at a barrier holds a core another worker needs).
EnvVars worker_environment(int threads, const char* user_wait_policy, const char* user_spin_count);

struct LaunchSpec {
  Launcher launcher = Launcher::mpirun;
  int num_workers = 1;
  std::vector<std::string> hosts;    // empty: all workers on this host (or Slurm's choice)
  EnvVars env;                       // exported to every worker
  bool as_root = false;              // mpirun refuses root without --allow-run-as-root
  std::vector<std::string> command;  // PROGRAM ARGS...
};

// The launcher's argv, argv[0] being "mpirun" or "srun" (launch.cpp resolves it on PATH):
//   mpirun -np N --oversubscribe --bind-to none --tag-output [--allow-run-as-root]
//          [-H h1:s1,h2:s2] -x K=V... -- PROGRAM ARGS...
//   srun -n N --mpi=pmix --label --quit-on-interrupt [-w h1,h2] PROGRAM ARGS...
//        (srun passes our environment, with `env` set, through to the workers)
// --bind-to none: each worker's thread count, not mpirun's core binding, decides where it runs.
std::vector<std::string> launcher_argv(const LaunchSpec& spec);

enum class Stream { out, err };

// One line of output: a worker's (rank >= 0) or the launcher's own (rank -1), without its '\n'.
struct OutputLine {
  int rank = -1;
  Stream stream = Stream::out;
  std::string text;

  bool operator==(const OutputLine&) const = default;
};

// What forwarding prints: "[rank R] text" for a worker's line, the launcher's lines unchanged.
std::string format_line(const OutputLine& line);

// A tag of mpirun's --tag-output at the start of `s`: "[1,0]<stdout>:" -> rank 0, stdout, 14
// characters ("<stderr>" and "<stddiag>" -> stderr).
struct MpirunTag {
  int rank = 0;
  Stream stream = Stream::out;
  size_t length = 0;
};
std::optional<MpirunTag> parse_mpirun_tag(std::string_view s);

// Splits one of the launcher's pipes into lines. mpirun tags each piece a worker writes, so a
// worker's line written in two pieces arrives as
// "[1,0]<stdout>:ab[1,1]<stdout>:xy[1,0]<stdout>:c\n": pieces are gathered per rank and stream
// until their newline. srun's --label lines are "R: text" (R padded with spaces), whole lines.
// Lines matching no tag are the launcher's own, kept on the pipe's stream.
class OutputDemux {
 public:
  OutputDemux(Launcher launcher, Stream pipe_stream) : launcher_(launcher), pipe_(pipe_stream) {}

  // The lines completed by `data`, in order.
  std::vector<OutputLine> feed(std::string_view data);
  // At end of the stream: what is left of unfinished lines.
  std::vector<OutputLine> finish();

 private:
  void split_mpirun(std::vector<OutputLine>& out, bool at_end);
  void split_srun(std::vector<OutputLine>& out, bool at_end);

  Launcher launcher_;
  Stream pipe_;
  std::string buf_;
  // mpirun: the piece being read (rank -1: launcher text), and unfinished lines per source.
  std::optional<std::pair<int, Stream>> piece_;
  std::map<std::pair<int, Stream>, std::string> partial_;
};

// The first worker that failed, as the launcher's summary tells it.
struct WorkerFailure {
  int rank = 0;
  int exit_code = 0;        // when it exited; 0 when killed by a signal
  int signal = 0;           // when killed by a signal; 0 when unknown (srun names it only)
  std::string signal_name;  // "Killed"

  // What launch exits with: the worker's exit code, or 128 + signal as a shell reports it.
  int launch_exit_code(int launcher_exit_code) const;
  // "rank 1 failed with exit code 3" / "rank 1 was killed by signal 9 (Killed)"
  std::string describe() const;
  bool operator==(const WorkerFailure&) const = default;
};

// Exit codes after which the same command would fail again, so launch never restarts on them:
// 2, a usage error (osprey's cli::UsageError, and most programs' bad arguments); 126, a program
// that cannot be executed; 127, one not found or that exec could not start (io::ChildProcess
// then prints "NAME: cannot run PROGRAM: why"). Returns why ("a usage error"), or nothing for any
// other code (a crash, a lost peer, a kill: a restart may well succeed).
std::optional<std::string> deterministic_failure(int exit_code);

// What launch says after it chose not to restart: "not restarting: the same command would fail
// again".
inline constexpr std::string_view kNotRestarting =
    "not restarting: the same command would fail again";

// What `osprey launch -n N` does after attempt `attempt` of `attempts` ended with exit code `code`
// (described by `ending`, "rank 1 failed with exit code 3"): restart the whole job while attempts
// are left and the failure is not deterministic, and the line it prints either way.
struct AfterFailure {
  bool restart = false;
  std::string message{};  // without the "osprey launch: " prefix
};
AfterFailure after_failure(int attempt, int attempts, int code, const std::string& ending);

// Reads the launcher's own lines (not the workers') for its failure summary, keeping the first:
//   mpirun: "Process name: [[29590,1],1]" then "Exit code:    3", or
//           "... process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
//   srun:   "srun: error: node1: task 1: Exited with exit code 3", or "...: task 1: Killed"
class FailureParser {
 public:
  void feed(std::string_view line);
  const std::optional<WorkerFailure>& failure() const { return failure_; }

 private:
  std::optional<int> pending_rank_;  // mpirun's "Process name:" before its "Exit code:"
  std::optional<WorkerFailure> failure_;
};

}  // namespace osprey::cli
