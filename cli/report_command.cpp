// `osprey report DIR`: writes DIR's page (cli/report/report.h) and prints where it went.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/report/report.h"
#include "cli/subcommands.h"

namespace osprey::cli {

void add_report(CLI::App& app) {
  struct Args {
    std::string dir, output;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "report",
      "Write one self-contained HTML page of a run, a tuner study or a training log: training "
      "curves, the trials, the ensemble's weights and the table of stages");
  cmd->add_option("DIR", a->dir,
                  "A folder written by osprey run (--output), osprey tune (--directory or its "
                  "project folder), osprey ensemble or osprey train with a CSV log")
      ->required();
  cmd->add_option("--output,-o", a->output, "The page to write (default DIR/report.html)");
  cmd->callback([a] {
    const auto file = report::write_report(a->dir, a->output);
    fmt::print("report: {}\n", file.string());
  });
}

}  // namespace osprey::cli
