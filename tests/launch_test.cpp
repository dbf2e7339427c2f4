// Unit tests of `osprey launch`'s pure parts (cli/launch/launch_util.h): the launcher's command
// line, the workers' thread share, the rank-tagged output and the failure summaries, using the
// exact text Open MPI 4.1 prints. tests/launch_test.sh runs the real thing under mpirun. And those
// of `osprey tune --command` (cli/tune_command.h, cli/command_trial.h): its command templates and a
// trial's placeholder values; tests/tune_command_test.sh runs the real thing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cli/launch/launch_util.h"
#include "cli/launch/local_cluster.h"
#include "cli/tune_command.h"
#include "cli/usage_error.h"
#include "osprey/io/subprocess.h"
#include "osprey/tune/command_trial.h"
#include "osprey/tune/hyperband.h"
#include "osprey/tune/random_search.h"

namespace osprey::cli {
namespace {

using Args = std::vector<std::string>;
// Command trials' templates live in tune/ (command_trial.h); the command checks them as usage.
using tune::command_placeholders;
using tune::substitute_command;
using tune::trial_placeholder_values;

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

// The message of the error of type E that `f` throws; "no error" when it throws none.
template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

std::string template_error(const std::string& command) {
  return error_of<ValueError>([&] { command_placeholders(command); });
}

TEST(CommandPlaceholdersTest, NamesEachPlaceholderInOrderWithRepeats) {
  EXPECT_EQ(command_placeholders("python3 t.py --lr {lr} --x {x} --again {lr}"),
            (Args{"lr", "x", "lr"}));
  EXPECT_EQ(command_placeholders("echo no placeholders"), Args{});
}

TEST(CommandPlaceholdersTest, DoubledBracesAreLiteralBraces) {
  EXPECT_EQ(command_placeholders("awk '{{print $1}}' {file} {{x}} }}{{"), Args{"file"});
  EXPECT_EQ(command_placeholders("{{{x}}}"), Args{"x"});
}

TEST(CommandPlaceholdersTest, AnUnmatchedBraceOrAnEmptyPlaceholderNamesItsPosition) {
  EXPECT_EQ(template_error("echo {x"),
            "--command: unmatched '{' at position 5 of 'echo {x' (write {{ for a literal brace)");
  EXPECT_EQ(template_error("echo {a{b}"),
            "--command: unmatched '{' at position 5 of 'echo {a{b}' (write {{ for a literal "
            "brace)");
  EXPECT_EQ(template_error("echo x}"),
            "--command: unmatched '}' at position 6 of 'echo x}' (write }} for a literal brace)");
  EXPECT_EQ(template_error("echo }}}"),
            "--command: unmatched '}' at position 7 of 'echo }}}' (write }} for a literal brace)");
  EXPECT_EQ(template_error("echo {}"),
            "--command: empty placeholder {} at position 5 of 'echo {}'");
}

TEST(ShellQuoteTest, SafeWordsStayBareTheRestIsSingleQuotedWithQuotesClosedAndReopened) {
  EXPECT_EQ(io::shell_quote(""), "''");
  EXPECT_EQ(io::shell_quote("0.01"), "0.01");
  EXPECT_EQ(io::shell_quote("OSPREY_NUM_THREADS=2"), "OSPREY_NUM_THREADS=2");
  EXPECT_EQ(io::shell_quote("a b"), "'a b'");
  EXPECT_EQ(io::shell_quote("it's"), R"('it'\''s')");
}

TEST(ShellQuoteTest, TheShellReadsBackExactlyTheValue) {
  for (const std::string v : {"a b", "it's", R"("q" \n $HOME `id` $(id) ; | & * ~)", "''", "x\ny",
                              "0.01", "-x", "a=b", "/tmp/a,b:c@d%e"}) {
    FILE* sh = popen(("printf '%s' " + io::shell_quote(v)).c_str(), "r");
    ASSERT_NE(sh, nullptr);
    std::string out;
    for (int c; (c = std::fgetc(sh)) != EOF;) out += static_cast<char>(c);
    EXPECT_EQ(pclose(sh), 0);
    EXPECT_EQ(out, v);
  }
}

TEST(SubstituteCommandTest, QuotesEachValueAndUnescapesBraces) {
  EXPECT_EQ(substitute_command("t.py --lr {lr} --name {name} --empty {e} {{literal}}",
                               {{"lr", "0.01"}, {"name", "it's a \"b\""}, {"e", ""}}),
            R"(t.py --lr 0.01 --name 'it'\''s a "b"' --empty '' {literal})");
}

TEST(SubstituteCommandTest, AnUnknownPlaceholderListsTheKnownOnes) {
  EXPECT_EQ(error_of<ValueError>([] {
              substitute_command("echo {z}", {{"x", "1"}, {"y", "2"}});
            }),
            "--command: unknown placeholder {z}; the placeholders are {x}, {y}");
}

tune::HyperParameters xy_space() {
  tune::HyperParameters space;
  space.Int("x", 0, 6);
  space.Choice("y", {0.25, 0.5, 0.75});
  return space;
}

TEST(CheckCommandTemplateTest, TakesTheSpacesNamesAndOspreysOwn) {
  EXPECT_NO_THROW(cli::check_command_template(
      "t {x} {y} {epochs} {initial_epoch} {trial_id} {trial_dir} {parent_trial_dir} {{z}}",
      xy_space()));
}

TEST(CheckCommandTemplateTest, AnUnknownPlaceholderIsAUsageErrorListingTheValidOnes) {
  EXPECT_EQ(error_of<UsageError>([] { cli::check_command_template("echo {x} {z}", xy_space()); }),
            "osprey tune: --command: unknown placeholder {z}; the placeholders are {epochs}, "
            "{initial_epoch}, {trial_id}, {trial_dir}, {parent_trial_dir}, {x}, {y} ({{ and }} "
            "are literal braces)");
}

TEST(CheckCommandTemplateTest, ATemplateThatDoesNotParseIsAUsageError) {
  EXPECT_EQ(error_of<UsageError>([] { cli::check_command_template("echo {x", xy_space()); }),
            "--command: unmatched '{' at position 5 of 'echo {x' (write {{ for a literal brace)");
}

TEST(CheckCommandTemplateTest, ASpaceMayNotDeclareAPlaceholderOspreyFillsIn) {
  tune::HyperParameters space = xy_space();
  space.Int("parent_trial_dir", 0, 1);
  EXPECT_EQ(error_of<UsageError>([&] { cli::check_command_template("echo {x}", space); }),
            "osprey tune: the search space declares 'parent_trial_dir', a placeholder osprey "
            "fills in itself; rename the hyperparameter (e.g. num_parent_trial_dir)");
}

TEST(TrialPlaceholderValuesTest, APromotedTrialNamesItsParentsFolder) {
  tune::RandomSearchOracle oracle({.objective = "loss", .hyperparameters = xy_space()});
  tune::Trial trial;
  trial.trial_id = "0004";
  trial.hyperparameters = xy_space();
  trial.hyperparameters.set("x", 3);
  trial.hyperparameters.set(tune::kTunerEpochs, 9);
  trial.hyperparameters.set(tune::kTunerInitialEpoch, 3);
  trial.hyperparameters.set(tune::kTunerTrialId, "0001");
  EXPECT_EQ(trial_placeholder_values(oracle, trial, /*default_epochs=*/5),
            (std::map<std::string, std::string>{{"x", "3"},
                                                {"y", "0.25"},  // the space's default
                                                {"epochs", "9"},
                                                {"initial_epoch", "3"},
                                                {"trial_id", "0004"},
                                                {"trial_dir", "trial_0004"},
                                                {"parent_trial_dir", "trial_0001"}}));
}

TEST(TrialPlaceholderValuesTest, ATrialWithoutAParentHasAnEmptyParentFolder) {
  tune::RandomSearchOracle oracle({.objective = "loss", .hyperparameters = xy_space()});
  tune::Trial trial;
  trial.trial_id = "0000";
  trial.hyperparameters = xy_space();
  const auto v = trial_placeholder_values(oracle, trial, /*default_epochs=*/5);
  EXPECT_EQ(v.at("parent_trial_dir"), "");
  EXPECT_EQ(v.at("epochs"), "5");
  EXPECT_EQ(v.at("initial_epoch"), "0");
}

// The supervisor of launch's local clusters (cli/launch/local_cluster.h): once the chief has ended,
// a server that ignores SIGTERM is killed a grace later, so launch does not wait on it for ever.
TEST(SuperviseTest, AServerThatIgnoresSigtermIsKilledAGraceAfterItWasAskedToStop) {
  const std::vector<std::string> env = io::environment_with({});
  // The chief ends only once the ps has installed its trap (it then writes `ready`): a SIGTERM
  // sent before `trap` ran would end the ps without the kill this test is about.
  char dir_template[] = "/tmp/osprey_supervise_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string ready = std::string(dir_template) + "/ready";
  std::vector<LocalTask> tasks;
  tasks.push_back({.type = "chief",
                   .index = 0,
                   .label = "[chief]",
                   .argv = io::find_program(
                       {"sh", "-c", "while [ ! -e '" + ready + "' ]; do sleep 0.01; done"}),
                   .env = env,
                   .primary = true});
  tasks.push_back(
      {.type = "ps",
       .index = 0,
       .label = "[ps 0]",
       .argv = io::find_program(
           {"sh", "-c", "trap '' TERM; : > '" + ready + "'; while :; do sleep 0.1; done"}),
       .env = env,
       .serves_others = true});
  testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  const int code =
      supervise(std::move(tasks), {.finish_grace_seconds = 0.5, .stop_grace_seconds = 0.5});
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 0);  // the chief's
  EXPECT_NE(err.find("osprey launch: the ps 0 did not stop 0.5 s after it was asked to; "
                     "killing it"),
            std::string::npos)
      << err;
  EXPECT_LT(took, std::chrono::seconds(30)) << "launch waited on the ps";
  std::remove(ready.c_str());
  rmdir(dir_template);
}

// Deterministic failures (exit 2: a usage error; 126, 127: a program that cannot run) are never
// restarted: the same command would fail again. Other failures restart while attempts are left.
TEST(LaunchRestartTest, AUsageErrorOrAProgramThatCannotRunIsNotRestarted) {
  EXPECT_EQ(deterministic_failure(2), "a usage error");
  EXPECT_EQ(deterministic_failure(126), "the program cannot be executed");
  EXPECT_EQ(deterministic_failure(127), "the program was not found or could not be started");
  for (int code : {1, 3, 134, 137}) EXPECT_EQ(deterministic_failure(code), std::nullopt) << code;
  const AfterFailure usage = after_failure(1, 4, 2, "rank 0 failed with exit code 2");
  EXPECT_FALSE(usage.restart);
  EXPECT_EQ(usage.message,
            "rank 0 failed with exit code 2 (a usage error); not restarting: the same command "
            "would fail again");
  const AfterFailure missing = after_failure(1, 4, 127, "rank 1 failed with exit code 127");
  EXPECT_FALSE(missing.restart);
  EXPECT_EQ(missing.message,
            "rank 1 failed with exit code 127 (the program was not found or could not be "
            "started); not restarting: the same command would fail again");
}

TEST(LaunchRestartTest, OtherFailuresRestartTheJobWhileAttemptsAreLeft) {
  const AfterFailure first = after_failure(1, 4, 5, "rank 1 failed with exit code 5");
  EXPECT_TRUE(first.restart);
  EXPECT_EQ(first.message,
            "attempt 1 of 4 ended: rank 1 failed with exit code 5; restarting the job (3 "
            "restarts left)");
  const AfterFailure third = after_failure(3, 4, 137, "rank 0 was killed by signal 9 (Killed)");
  EXPECT_TRUE(third.restart);
  EXPECT_EQ(third.message,
            "attempt 3 of 4 ended: rank 0 was killed by signal 9 (Killed); restarting the job (1 "
            "restart left)");
  const AfterFailure last = after_failure(4, 4, 5, "rank 1 failed with exit code 5");
  EXPECT_FALSE(last.restart);
  EXPECT_EQ(last.message, "rank 1 failed with exit code 5");
}

// A scratch folder for the supervise tests, removed with what is in it.
struct ScratchDir {
  ScratchDir() {
    char name[] = "/tmp/osprey_supervise_XXXXXX";
    EXPECT_NE(mkdtemp(name), nullptr);
    path = name;
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

int lines_in(const std::string& path) {
  std::ifstream in(path);
  return static_cast<int>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

// A chief that waits until `marker` exists, then `seconds` more (time for a wrong restart to show),
// and exits with `code`.
LocalTask waiting_chief(const std::string& marker, double seconds, int code) {
  return {.type = "chief",
          .index = 0,
          .label = "[chief]",
          .argv = io::find_program({"sh", "-c",
                                    fmt::format("while [ ! -e '{}' ]; do sleep 0.01; done; sleep "
                                                "{}; exit {}",
                                                marker, seconds, code)}),
          .env = io::environment_with({}),
          .primary = true};
}

TEST(SuperviseTest, AWorkerThatExitsWithAUsageErrorIsSaidOnceAndNotRestarted) {
  const ScratchDir dir;
  const std::string runs = dir.file("runs");
  std::vector<LocalTask> tasks;
  tasks.push_back(waiting_chief(runs, 1.0, 0));
  tasks.push_back({.type = "worker",
                   .index = 0,
                   .label = "[worker 0]",
                   .argv = io::find_program(
                       {"sh", "-c", "echo run >> '" + runs + "'; echo 'bad flag' >&2; exit 2"}),
                   .env = io::environment_with({}),
                   .restarts_left = 3});
  testing::internal::CaptureStderr();
  const int code =
      supervise(std::move(tasks), {.finish_grace_seconds = 5, .stop_grace_seconds = 5});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 0);  // the chief's
  EXPECT_EQ(lines_in(runs), 1) << "the worker was restarted:\n" << err;
  EXPECT_NE(err.find("osprey launch: worker 0 exited with code 2 (a usage error); not restarting: "
                     "the same command would fail again\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("restarting it"), std::string::npos) << err;
}

TEST(SuperviseTest, AProgramThatCannotRunIsNamedOnceAndNotRestarted) {
  const ScratchDir dir;
  const std::string missing = dir.file("no-such-program");
  std::vector<LocalTask> tasks;
  // The chief runs a second (its marker, the folder, exists): time enough for a wrong restart.
  tasks.push_back(waiting_chief(dir.path, 1.0, 0));
  tasks.push_back({.type = "worker",
                   .index = 1,
                   .label = "[worker 1]",
                   .argv = {missing, "--flag"},
                   .env = io::environment_with({}),
                   .restarts_left = 3});
  testing::internal::CaptureStderr();
  const int code =
      supervise(std::move(tasks), {.finish_grace_seconds = 5, .stop_grace_seconds = 5});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 0);
  const std::string said =
      "[worker 1] osprey launch: cannot run " + missing + ": No such file or directory\n";
  const size_t first = err.find(said);
  EXPECT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(said, first + 1), std::string::npos) << "said twice: restarted\n" << err;
  EXPECT_NE(err.find("osprey launch: worker 1 exited with code 127 (the program was not found or "
                     "could not be started); not restarting: the same command would fail "
                     "again\n"),
            std::string::npos)
      << err;
}

// After the chief fails, the workers would wait for steps that never come and the ps serve
// nobody: every task is stopped at once, not a finish grace (a minute for a ps cluster) later.
TEST(SuperviseTest, WhenTheChiefFailsEveryOtherTaskIsStoppedAtOnce) {
  const ScratchDir dir;
  const std::string ready = dir.file("ready");
  std::vector<LocalTask> tasks;
  tasks.push_back(waiting_chief(ready, 0.0, 3));
  // `exec sleep`: the task is the sleep itself, so SIGTERM ends it (a shell would leave its
  // child holding the pipes).
  tasks.push_back({.type = "worker",
                   .index = 0,
                   .label = "[worker 0]",
                   .argv = io::find_program({"sh", "-c", "exec sleep 120"}),
                   .env = io::environment_with({}),
                   .restarts_left = 3});
  tasks.push_back({.type = "ps",
                   .index = 0,
                   .label = "[ps 0]",
                   .argv = io::find_program({"sh", "-c", ": > '" + ready + "'; exec sleep 120"}),
                   .env = io::environment_with({}),
                   .restarts_left = 3,
                   .serves_others = true});
  testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  const int code =
      supervise(std::move(tasks), {.finish_grace_seconds = 60, .stop_grace_seconds = 60});
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 3);
  EXPECT_NE(err.find("osprey launch: the chief exited with code 3\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("restarting"), std::string::npos) << err;
  EXPECT_EQ(err.find("killing it"), std::string::npos) << "SIGTERM was enough:\n" << err;
  EXPECT_LT(took, std::chrono::seconds(5)) << "launch waited on the worker and the ps\n" << err;
}

}  // namespace
}  // namespace osprey::cli
