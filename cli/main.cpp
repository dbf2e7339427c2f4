// The `osprey` command. Exit codes: 0 ok, 1 failure, 2 bad usage (CLI11's parse errors and the
// subcommands' own checks of their options and environment, cli/usage_error.h).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/wait_policy.h"
#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"

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
  osprey::cli::add_info(app);
  osprey::cli::add_train(app);
  osprey::cli::add_evaluate(app);
  osprey::cli::add_predict(app);
  osprey::cli::add_tune(app);
  osprey::cli::add_quantize(app);
  osprey::cli::add_launch(app);
  osprey::cli::add_launch_worker(app);
  osprey::cli::add_run(app);
  osprey::cli::add_ensemble(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const osprey::cli::UsageError& e) {  // a subcommand refused its options
    fmt::print(stderr, "osprey: error: {}\n", e.what());
    osprey::comm::mpi_abort_if_running(2);  // the other ranks may be waiting in a collective
    return 2;
  } catch (const std::exception& e) {  // a failure, a ValueError from deep inside fit included
    fmt::print(stderr, "osprey: error: {}\n", e.what());
    osprey::comm::mpi_abort_if_running(1);
    return 1;
  }
  return 0;
}
