// Unit tests of `osprey launch`'s pure parts (cli/launch_util.h): the launcher's command line,
// the workers' thread share, the rank-tagged output and the failure summaries, using the exact
// text Open MPI 4.1 prints. tests/launch_test.sh runs the real thing under mpirun.
#include <gtest/gtest.h>

#include <algorithm>

#include "cli/launch_util.h"

namespace osprey::cli {
namespace {

using Args = std::vector<std::string>;

TEST(LaunchArgvTest, MpirunStartsNWorkersUnboundTaggedWithTheirEnvironment) {
  const LaunchSpec spec{.launcher = Launcher::mpirun,
                        .num_workers = 2,
                        .hosts = {},
                        .env = {{"OSPREY_NUM_THREADS", "1"}, {"GOMP_SPINCOUNT", "1000"}},
                        .as_root = false,
                        .command = {"python3", "-c", "print(1)"}};
  EXPECT_EQ(launcher_argv(spec), (Args{"mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none",
                                       "--tag-output", "-x", "OSPREY_NUM_THREADS=1", "-x",
                                       "GOMP_SPINCOUNT=1000", "--", "python3", "-c", "print(1)"}));
}

TEST(LaunchArgvTest, MpirunAsRootAllowsItAndSpreadsWorkersOverHostsRoundRobin) {
  const LaunchSpec spec{.launcher = Launcher::mpirun,
                        .num_workers = 5,
                        .hosts = {"a", "b"},
                        .env = {},
                        .as_root = true,
                        .command = {"prog"}};
  EXPECT_EQ(launcher_argv(spec),
            (Args{"mpirun", "-np", "5", "--oversubscribe", "--bind-to", "none", "--tag-output",
                  "--allow-run-as-root", "-H", "a:3,b:2", "--", "prog"}));
}

TEST(LaunchArgvTest, HostsWithoutAWorkerAreLeftOut) {
  const LaunchSpec spec{.launcher = Launcher::mpirun,
                        .num_workers = 2,
                        .hosts = {"a", "b", "c"},
                        .env = {},
                        .as_root = false,
                        .command = {"prog"}};
  const Args argv = launcher_argv(spec);
  const auto h = std::find(argv.begin(), argv.end(), "-H");
  ASSERT_NE(h, argv.end());
  EXPECT_EQ(*(h + 1), "a:1,b:1");
}

TEST(LaunchArgvTest, SrunUsesPmixAndLabelsAndPassesTheEnvironmentThrough) {
  const LaunchSpec spec{.launcher = Launcher::srun,
                        .num_workers = 4,
                        .hosts = {"n1", "n2"},
                        .env = {{"OSPREY_NUM_THREADS", "2"}},
                        .as_root = true,
                        .command = {"prog", "--flag"}};
  EXPECT_EQ(launcher_argv(spec), (Args{"srun", "-n", "4", "--mpi=pmix", "--label",
                                       "--quit-on-interrupt", "-w", "n1,n2", "prog", "--flag"}));
}

TEST(LaunchSlotsTest, WorkersGoRoundRobinOverHosts) {
  EXPECT_EQ(slots_per_host(5, 2), (std::vector<int>{3, 2}));
  EXPECT_EQ(slots_per_host(4, 4), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(slots_per_host(1, 3), (std::vector<int>{1, 0, 0}));
}

TEST(LaunchThreadsTest, CoresAreSharedByTheWorkersOfThisHost) {
  EXPECT_EQ(worker_threads(0, 2, 0, 16), 8);
  EXPECT_EQ(worker_threads(0, 3, 0, 16), 5);
  EXPECT_EQ(worker_threads(0, 4, 2, 16), 8);  // 2 workers per host
  EXPECT_EQ(worker_threads(0, 5, 2, 16), 5);  // the first host has 3
}

TEST(LaunchThreadsTest, EachWorkerGetsAtLeastOneThreadAndAnExplicitCountWins) {
  EXPECT_EQ(worker_threads(0, 8, 0, 2), 1);
  EXPECT_EQ(worker_threads(3, 8, 0, 2), 3);
}

TEST(LaunchEnvironmentTest, IdleThreadsSpinBrieflyUnlessTheUserChoseHowTheyWait) {
  EXPECT_EQ(
      worker_environment(4, nullptr, nullptr),
      (EnvVars{{"OSPREY_NUM_THREADS", "4"}, {"OMP_NUM_THREADS", "4"}, {"GOMP_SPINCOUNT", "1000"}}));
  EXPECT_EQ(worker_environment(1, "ACTIVE", nullptr).back(),
            (std::pair<std::string, std::string>{"OMP_WAIT_POLICY", "ACTIVE"}));
  EXPECT_EQ(worker_environment(1, nullptr, "5").back(),
            (std::pair<std::string, std::string>{"GOMP_SPINCOUNT", "5"}));
}

TEST(LaunchChooseTest, SrunOnlyInsideASlurmAllocationWithSrunOnPath) {
  EXPECT_EQ(choose_launcher(true, true), Launcher::srun);
  EXPECT_EQ(choose_launcher(true, false), Launcher::mpirun);
  EXPECT_EQ(choose_launcher(false, true), Launcher::mpirun);
}

TEST(MpirunTagTest, ParsesRankAndStream) {
  const auto out = parse_mpirun_tag("[1,0]<stdout>:hello");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->rank, 0);
  EXPECT_EQ(out->stream, Stream::out);
  EXPECT_EQ(out->length, 14u);
  const auto err = parse_mpirun_tag("[29590,12]<stderr>:x");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->rank, 12);
  EXPECT_EQ(err->stream, Stream::err);
  EXPECT_EQ(parse_mpirun_tag("[1,3]<stddiag>:x")->stream, Stream::err);
}

TEST(MpirunTagTest, RejectsTextThatIsNoTag) {
  EXPECT_FALSE(parse_mpirun_tag("hello"));
  EXPECT_FALSE(parse_mpirun_tag("[1,0]<stdin>:x"));
  EXPECT_FALSE(parse_mpirun_tag("[1,]<stdout>:x"));
  EXPECT_FALSE(parse_mpirun_tag("[1,0]<stdout>"));  // cut short
}

TEST(OutputLineTest, WorkerLinesGetARankPrefixLauncherLinesStayAsTheyAre) {
  EXPECT_EQ(format_line({1, Stream::out, "hello from 1"}), "[rank 1] hello from 1");
  EXPECT_EQ(format_line({-1, Stream::err, "----"}), "----");
}

TEST(OutputDemuxTest, RewritesWholeTaggedLinesByRankAndStream) {
  OutputDemux demux(Launcher::mpirun, Stream::out);
  EXPECT_EQ(demux.feed("[1,0]<stdout>:hello from 0\n[1,1]<stderr>:oops\n"),
            (std::vector<OutputLine>{{0, Stream::out, "hello from 0"}, {1, Stream::err, "oops"}}));
  EXPECT_TRUE(demux.finish().empty());
}

TEST(OutputDemuxTest, GathersPiecesOfALinePerRankUntilItsNewline) {
  // What mpirun prints when each rank writes "abc", then "def\nxyz" (no final newline).
  OutputDemux demux(Launcher::mpirun, Stream::out);
  EXPECT_EQ(demux.feed("[1,0]<stdout>:abc[1,1]<stdout>:abc[1,0]<stdout>:def\n[1,0]<stdout>:xyz"),
            (std::vector<OutputLine>{{0, Stream::out, "abcdef"}}));
  EXPECT_EQ(demux.feed("[1,1]<stdout>:def\n[1,1]<stdout>:xyz"),
            (std::vector<OutputLine>{{1, Stream::out, "abcdef"}}));
  EXPECT_EQ(demux.finish(),
            (std::vector<OutputLine>{{0, Stream::out, "xyz"}, {1, Stream::out, "xyz"}}));
}

TEST(OutputDemuxTest, ATagCutByTheEndOfAReadWaitsForTheRest) {
  OutputDemux demux(Launcher::mpirun, Stream::out);
  EXPECT_TRUE(demux.feed("[1,0]<stdout>:ab[1,1]<std").empty());
  EXPECT_EQ(demux.feed("out>:cd\n"), (std::vector<OutputLine>{{1, Stream::out, "cd"}}));
  EXPECT_TRUE(demux.feed("[1,").empty());
  EXPECT_EQ(demux.feed("0]<stdout>:e\n"), (std::vector<OutputLine>{{0, Stream::out, "abe"}}));
}

TEST(OutputDemuxTest, MpirunsOwnLinesStayOnTheirPipe) {
  OutputDemux demux(Launcher::mpirun, Stream::err);
  EXPECT_EQ(demux.feed("  Exit code:    3\n[rank text] [1,x]\n"),
            (std::vector<OutputLine>{{-1, Stream::err, "  Exit code:    3"},
                                     {-1, Stream::err, "[rank text] [1,x]"}}));
  EXPECT_EQ(demux.feed("-----[1,0]<stderr>:late\n"),
            (std::vector<OutputLine>{{0, Stream::err, "late"}}));
  EXPECT_EQ(demux.finish(), (std::vector<OutputLine>{{-1, Stream::err, "-----"}}));
}

TEST(OutputDemuxTest, SrunLabelsArePaddedRanksBeforeAColon) {
  OutputDemux demux(Launcher::srun, Stream::err);
  EXPECT_EQ(demux.feed(
                " 3: three\n12: twelve: yes\nsrun: error: n1: task 3: Exited with exit code 1\n0:"),
            (std::vector<OutputLine>{
                {3, Stream::err, "three"},
                {12, Stream::err, "twelve: yes"},
                {-1, Stream::err, "srun: error: n1: task 3: Exited with exit code 1"}}));
  EXPECT_EQ(demux.finish(), (std::vector<OutputLine>{{0, Stream::err, ""}}));
}

// Open MPI 4.1.4's summary for `sh -c 'exit $((OMPI_COMM_WORLD_RANK*3))'` on 2 ranks.
TEST(FailureParserTest, ReadsMpirunsExitCodeSummary) {
  FailureParser p;
  for (const char* line :
       {"Primary job  terminated normally, but 1 process returned",
        "mpirun detected that one or more processes exited with non-zero status, thus causing", "",
        "  Process name: [[29590,1],1]", "  Exit code:    3",
        "--------------------------------------------------------------------------"}) {
    p.feed(line);
  }
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->rank, 1);
  EXPECT_EQ(p.failure()->exit_code, 3);
  EXPECT_EQ(p.failure()->describe(), "rank 1 failed with exit code 3");
  EXPECT_EQ(p.failure()->launch_exit_code(3), 3);
}

TEST(FailureParserTest, ReadsMpirunsSignalSummary) {
  FailureParser p;
  p.feed("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).");
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->rank, 1);
  EXPECT_EQ(p.failure()->signal, 9);
  EXPECT_EQ(p.failure()->describe(), "rank 1 was killed by signal 9 (Killed)");
  EXPECT_EQ(p.failure()->launch_exit_code(137), 128 + 9);
}

TEST(FailureParserTest, KeepsTheFirstFailure) {
  FailureParser p;
  p.feed("srun: error: node1: task 2: Exited with exit code 4");
  p.feed("srun: error: node1: task 0: Killed");
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->describe(), "rank 2 failed with exit code 4");
}

TEST(FailureParserTest, ReadsSrunsSignalNames) {
  FailureParser p;
  p.feed("srun: error: node1: tasks 1-3: Killed");
  ASSERT_TRUE(p.failure());
  EXPECT_EQ(p.failure()->rank, 1);
  EXPECT_EQ(p.failure()->signal, 9);
  EXPECT_EQ(p.failure()->launch_exit_code(137), 137);
}

TEST(FailureParserTest, IgnoresOtherLines) {
  FailureParser p;
  p.feed("  Exit code:    3");  // without its "Process name:"
  p.feed("srun: error: Unable to create step for job 12: task 1 of nothing");
  p.feed("2 total processes failed to start");
  EXPECT_FALSE(p.failure());
}

}  // namespace
}  // namespace osprey::cli
