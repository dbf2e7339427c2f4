// Child processes and the stop signals that must reach them: what `osprey launch` (mpirun and the
// local clusters), `osprey launch-worker` and command trials (`osprey tune --command`) share. One
// way to start a program (its own process group, stdout and stderr on pipes, stopped if we die),
// one PATH look-up, one quoting rule, one line splitter, and one way to pass SIGINT and SIGTERM on.
//   io::SignalForwarding forwarding(io::SignalForwarding::Target::group);
//   io::ChildProcess child = io::ChildProcess::start({"/bin/sh", "-c", command}, {.env = env});
//   forwarding.set_target(child.pid());
//   ... read child.out_fd() / child.err_fd() until both close ...
//   const int status = child.wait();
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace osprey::io {

struct ChildOptions {
  // The whole environment (environment_with builds one); empty: this process's.
  std::vector<std::string> env{};
  // stdout and stderr on pipes (out_fd, err_fd); otherwise inherited.
  bool pipes = true;
  // Only these cores (a tuner worker's core group).
  std::optional<cpu_set_t> cpus{};
  // What the child writes to stderr when exec fails, before "cannot run PROGRAM: why" (exit 127).
  std::string name = "osprey";
  // Publish the pid to SignalForwarding::set_target before SIGINT and SIGTERM are unblocked
  // (the one child that gets forwarded signals, not each of a cluster's tasks).
  bool forward_signals_to_it = false;
};

// A started program. Its process group is its own: Ctrl-C reaches only us, and we pass it on once
// (mpirun getting the terminal's SIGINT too would see two and exit at once, leaving its workers
// running); a signal sent to the group reaches everything it started. If we die without passing a
// signal on (SIGKILL), PR_SET_PDEATHSIG stops it. Movable, not copyable; the destructor closes
// the pipes but neither kills nor reaps (call wait()).
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Starts argv[0] (a bare name is looked up on PATH, find_program) with argv. SIGINT and SIGTERM
  // are blocked from before the fork until the pid is published (forward_signals_to_it), so a
  // forwarded signal never misses the child. Error naming the program when fork or pipe fail;
  // a program that cannot be executed exits 127 after "NAME: cannot run PROGRAM: why" on stderr.
  static ChildProcess start(const std::vector<std::string>& argv, const ChildOptions& options = {});

  pid_t pid() const noexcept { return pid_; }
  bool started() const noexcept { return pid_ > 0; }
  int out_fd() const noexcept { return out_fd_; }
  int err_fd() const noexcept { return err_fd_; }
  // Closes one pipe (at its end of file) or both.
  void close_out();
  void close_err();
  void close_pipes();

  // Sends sig to the child alone, or to its whole process group. Nothing once it was reaped.
  void send(int sig) const;
  void send_to_group(int sig) const;

  // The wait status once it has ended (without blocking); nothing while it runs.
  std::optional<int> poll_exit();
  // Blocks until it ends (EINTR retried); its wait status. The status again when already reaped.
  int wait();
  bool reaped() const noexcept { return reaped_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// For its life, SIGINT and SIGTERM are caught and passed on to the child set with set_target: the
// same signal to it alone, or SIGTERM to its whole process group (a shell and what it started;
// SIGTERM, because a program a shell started in the background ignores SIGINT). The last one
// received is kept for the caller to act on; with die_after, we then die of the signal ourselves
// (a command trial's Ctrl-C: stop the trial's program, then osprey). The handlers are installed
// without SA_RESTART, so a blocking poll or waitpid returns EINTR and the caller's loop sees
// received(). The old handlers come back after. One at a time per process (an Error otherwise): the
// handler's state is process-wide.
class SignalForwarding {
 public:
  enum class Target { process, group };
  explicit SignalForwarding(Target target, bool die_after = false);
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  // The child to pass signals to (0: none, the signal is only recorded).
  static void set_target(pid_t pid) noexcept;
  // The last signal received and not yet taken (0: none); take_received() clears it.
  static int received() noexcept;
  static int take_received() noexcept;
};

// The wait status as a shell reports it: the exit code, or 128 + the signal that killed it.
int shell_exit_code(int wait_status);
// "exited with code 3" / "was killed by signal 9 (Killed)".
std::string describe_wait_status(int wait_status);

// name's path as a shell finds it: name itself when it has a '/', else the first executable
// regular file of that name in PATH's folders (an empty entry is the current folder); nothing
// when none is.
std::optional<std::string> find_on_path(std::string_view name);
// The command with a bare program name replaced by its path (find_on_path); unchanged when it has
// a '/' or is not found (exec then fails and says so).
std::vector<std::string> find_program(std::vector<std::string> command);

// s as one /bin/sh word: unchanged when every character is safe (letters, digits, _-+=/.,:@%),
// else in single quotes, an embedded single quote written '\''.
std::string shell_quote(std::string_view s);

// This process's environment with `overrides` (NAME, VALUE) replacing or adding variables.
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides);

// The path of the running executable (/proc/self/exe resolved), for starting osprey again.
std::string self_executable();

// Bytes from a pipe cut into lines ('\n'; a trailing '\r' dropped). A line longer than
// max_line_bytes is cut there, so a program that never ends a line cannot grow the buffer without
// bound.
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line_bytes = size_t{64} << 10) : max_(max_line_bytes) {}
  // The lines `bytes` completes, in order.
  std::vector<std::string> feed(std::string_view bytes);
  // At the end of the stream: the unfinished last line, if any.
  std::vector<std::string> finish();

 private:
  std::string take();
  size_t max_;
  std::string partial_{};
};

}  // namespace osprey::io
