// The `osprey` command's subcommands: each file in cli/ registers one on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace osprey::cli {

void add_info(CLI::App& app);
void add_train(CLI::App& app);
void add_evaluate(CLI::App& app);
void add_predict(CLI::App& app);
void add_tune(CLI::App& app);
void add_quantize(CLI::App& app);
void add_launch(CLI::App& app);
void add_launch_worker(CLI::App& app);
void add_run(CLI::App& app);
void add_ensemble(CLI::App& app);
void add_ps(CLI::App& app);
void add_report(CLI::App& app);
void add_generate(CLI::App& app);
// A worked example at the foot of each subcommand's --help (cli/examples.cpp).
void add_examples(CLI::App& app);

}  // namespace osprey::cli
