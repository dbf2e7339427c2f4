#include "osprey/io/subprocess.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "osprey/core/error.h"

namespace osprey::io {
namespace {

// Everything the child writes to one pipe, until it closes.
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(ChildProcessTest, RunsABareProgramFromPathWithItsOutputOnPipesAndItsExitCode) {
  ChildProcess c = ChildProcess::start({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(read_all(c.out_fd()), "out\n");
  EXPECT_EQ(read_all(c.err_fd()), "err\n");
  const int status = c.wait();
  EXPECT_EQ(shell_exit_code(status), 3);
  EXPECT_EQ(describe_wait_status(status), "exited with code 3");
  EXPECT_EQ(c.wait(), status);  // reaped once; asked again, the same status
}

TEST(ChildProcessTest, AProgramThatCannotRunExits127NamingItAndWhy) {
  ChildProcess c = ChildProcess::start({"no-such-program-osprey", "x"}, {.name = "osprey launch"});
  EXPECT_EQ(read_all(c.err_fd()),
            "osprey launch: cannot run no-such-program-osprey: No such file or directory\n");
  EXPECT_EQ(shell_exit_code(c.wait()), 127);
}

TEST(ChildProcessTest, TheEnvironmentGivenIsTheWholeEnvironment) {
  ChildProcess c = ChildProcess::start({"/bin/sh", "-c", "echo \"$A|$HOME\""},
                                       {.env = {"A=1", "PATH=/usr/bin:/bin"}});
  EXPECT_EQ(read_all(c.out_fd()), "1|\n");
  EXPECT_EQ(shell_exit_code(c.wait()), 0);
}

TEST(ChildProcessTest, ItRunsInAProcessGroupOfItsOwnThatASignalReachesWhole) {
  ChildProcess c = ChildProcess::start({"/bin/sh", "-c", "sleep 30 & echo started; wait"});
  char buf[16];
  ASSERT_GT(read(c.out_fd(), buf, sizeof buf), 0);  // the background sleep runs
  EXPECT_EQ(getpgid(c.pid()), c.pid());
  c.send_to_group(SIGKILL);
  const int status = c.wait();
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(describe_wait_status(status), "was killed by signal 9 (Killed)");
  EXPECT_EQ(shell_exit_code(status), 137);
  // The sleep got it too: nothing holds the pipe open any more.
  EXPECT_EQ(read_all(c.out_fd()), "");
}

TEST(ChildProcessTest, PollExitSaysNothingWhileItRuns) {
  ChildProcess c = ChildProcess::start({"/bin/sh", "-c", "exec sleep 30"});
  EXPECT_FALSE(c.poll_exit().has_value());
  c.send(SIGTERM);
  EXPECT_EQ(shell_exit_code(c.wait()), 128 + SIGTERM);
  EXPECT_TRUE(c.poll_exit().has_value());
}

TEST(SignalForwardingTest, ASignalToUsReachesTheChildAndIsRecorded) {
  SignalForwarding forwarding(SignalForwarding::Target::process);
  ChildProcess c = ChildProcess::start({"/bin/sh", "-c", "echo ready; exec sleep 30"},
                                       {.forward_signals_to_it = true});
  char buf[16];
  ASSERT_GT(read(c.out_fd(), buf, sizeof buf), 0);
  kill(getpid(), SIGTERM);  // handled: we live on, the child gets it
  EXPECT_EQ(shell_exit_code(c.wait()), 128 + SIGTERM);
  EXPECT_EQ(SignalForwarding::take_received(), SIGTERM);
  EXPECT_EQ(SignalForwarding::received(), 0);
}

TEST(SignalForwardingTest, OneAtATime) {
  SignalForwarding first(SignalForwarding::Target::process);
  EXPECT_THROW(SignalForwarding second(SignalForwarding::Target::group), Error);
}

TEST(FindOnPathTest, FindsExecutablesAsAShellDoes) {
  const std::optional<std::string> sh = find_on_path("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_EQ(access(sh->c_str(), X_OK), 0);
  EXPECT_EQ(find_on_path("/x/y"), std::optional<std::string>("/x/y"));
  EXPECT_FALSE(find_on_path("no-such-program-osprey").has_value());
  EXPECT_EQ(find_program({"no-such-program-osprey", "a"}),
            (std::vector<std::string>{"no-such-program-osprey", "a"}));
  EXPECT_EQ(find_program({"sh", "-c"})[0], *sh);
}

TEST(EnvironmentWithTest, ReplacesAndAddsVariables) {
  setenv("OSPREY_SUBPROCESS_TEST", "old", 1);
  const std::vector<std::string> env =
      environment_with({{"OSPREY_SUBPROCESS_TEST", "new"}, {"OSPREY_SUBPROCESS_ADDED", "1"}});
  EXPECT_EQ(std::count(env.begin(), env.end(), "OSPREY_SUBPROCESS_TEST=new"), 1);
  EXPECT_EQ(std::count(env.begin(), env.end(), "OSPREY_SUBPROCESS_TEST=old"), 0);
  EXPECT_EQ(std::count(env.begin(), env.end(), "OSPREY_SUBPROCESS_ADDED=1"), 1);
  unsetenv("OSPREY_SUBPROCESS_TEST");
}

TEST(LineSplitterTest, SplitsAcrossReadsDropsCarriageReturnsAndCapsLongLines) {
  LineSplitter split(8);
  EXPECT_EQ(split.feed("ab"), std::vector<std::string>{});
  EXPECT_EQ(split.feed("c\r\nde\nf"), (std::vector<std::string>{"abc", "de"}));
  EXPECT_EQ(split.feed("123456789"), (std::vector<std::string>{"f1234567"}));
  EXPECT_EQ(split.finish(), (std::vector<std::string>{"89"}));
  EXPECT_EQ(split.finish(), std::vector<std::string>{});
}

}  // namespace
}  // namespace osprey::io
