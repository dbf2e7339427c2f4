// The `osprey` command. Exit codes: 0 ok, 1 failure, 2 bad usage (CLI11's parse errors and the
// subcommands' own checks of their options and environment, cli/usage_error.h). An error starts on
// its own line, even when fit's progress bar had one open.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/wait_policy.h"
#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"
#include "osprey/train/progbar.h"
#include "osprey/version.h"

int main(int argc, char** argv) {
  // libgomp reads how idle threads wait only when it loads: set a sharing-friendly spin count and
  // start again, unless the user chose (cli/wait_policy.h). Should exec fail, run as we are.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    const auto [name, value] = osprey::cli::wait_setting(nullptr, nullptr);
    setenv(name.c_str(), value.c_str(), 1);
    execv("/proc/self/exe", argv);
  }
  CLI::App app{"osprey: train, tune, ensemble and quantize deep-learning models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("osprey ") + osprey::kVersion);
  app.option_defaults()->always_capture_default();  // --help shows each option's default
  osprey::cli::add_info(app);
  osprey::cli::add_train(app);
  osprey::cli::add_evaluate(app);
  osprey::cli::add_predict(app);
  osprey::cli::add_generate(app);
  osprey::cli::add_tune(app);
  osprey::cli::add_quantize(app);
  osprey::cli::add_launch(app);
  osprey::cli::add_launch_worker(app);
  osprey::cli::add_run(app);
  osprey::cli::add_ensemble(app);
  osprey::cli::add_ps(app);
  osprey::cli::add_report(app);
  osprey::cli::add_examples(app);
  // CLI11 answers a missing or misspelt command with "A subcommand is required": name it instead.
  const auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  const bool known =
      argc >= 2 && std::any_of(subcommands.begin(), subcommands.end(),
                               [&](const CLI::App* c) { return c->check_name(argv[1]); });
  if (argc < 2 || (argv[1][0] != '-' && !known)) {
    std::string commands;
    for (const CLI::App* c : subcommands) {
      if (!c->get_group().empty()) commands += (commands.empty() ? "" : ", ") + c->get_name();
    }
    if (argc < 2) {
      fmt::print(stderr, "osprey: a command is required: {} (osprey --help)\n", commands);
    } else {
      fmt::print(stderr, "osprey: unknown command '{}'; the commands are {} (osprey --help)\n",
                 argv[1], commands);
    }
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const osprey::cli::ExitCode& e) {
    return e.code;
  } catch (const osprey::cli::UsageError& e) {      // a subcommand refused its options
    osprey::train::ProgbarLogger::end_open_line();  // an error starts on its own line
    fmt::print(stderr, "osprey: error: {}\n", e.what());
    osprey::comm::mpi_abort_if_running(2);  // the other ranks may be waiting in a collective
    return 2;
  } catch (const std::exception& e) {  // a failure, a ValueError from deep inside fit included
    osprey::train::ProgbarLogger::end_open_line();
    fmt::print(stderr, "osprey: error: {}\n", e.what());
    osprey::comm::mpi_abort_if_running(1);
    return 1;
  }
  return 0;
}
